import Testing
@testable import PushCore

/// A job prepared once and composed target by target gives, for every target, what checking the
/// whole message gives: the same request bytes, the same issues in the same order. The expected
/// outcome here is built by hand (the message as JSON) and judged by `validate(message:)` and
/// the generic JSON writer, not by the per-recipient shortcut under test.
@Suite(.timeLimit(.minutes(1))) struct PreparedJobTests {
    static let cleanApp = AppConfiguration(appID: "clean", projectID: "p", credentialsFile: "/dev/null",
                                           defaultPayload: ["pushdata.source": "crm"],
                                           extraOptions: ["android": ["priority": "high"]])
    /// Its shared part breaks rules by itself: every message is checked whole.
    static let dirtyApp = AppConfiguration(appID: "dirty", projectID: "p", credentialsFile: "/dev/null",
                                           defaultPayload: ["gcm.reserved": "x"],
                                           extraOptions: ["android": ["priority": "urgent"]])

    /// What composing target `index` of `job` must give, from the message written out by hand.
    func expected(_ job: SendJob, app: AppConfiguration, index: Int, target: (String, String),
                  recipientData: [String: String]) -> CompositionOutcome {
        let id = MessageID.resolve(job: job, recipientIndex: index)
        var data = app.defaultPayload.merging(recipientData) { _, r in r }
        data["mn_message_id"] = id
        let message: JSONValue = .object(["android": app.extraOptions["android"]!, "notification": ["title": "T"],
                                          "data": .object(data.mapValues(JSONValue.string)), target.0: .string(target.1)])
        let issues = MessageValidator().validate(message: message)
        guard issues.isEmpty else { return .invalid(recipientIndex: index, mnMessageID: id, issues: issues) }
        var body: [String: JSONValue] = ["message": message]
        if job.validateOnly { body["validate_only"] = true }
        return .message(ComposedMessage(recipientIndex: index, mnMessageID: id,
                                        body: JSONValue.object(body).encodedBytes()))
    }

    func recipientsJob(_ recipients: [Recipient], validateOnly: Bool = false) -> SendJob {
        SendJob(jobID: "job-1", appID: "a", notification: NotificationContent(title: "T"), target: .recipients(recipients),
                validateOnly: validateOnly)
    }

    @Test(arguments: [false, true])
    func everyRecipientComposesAsTheWholeMessageChecksWhateverItBreaks(validateOnly: Bool) throws {
        // Bad tokens, reserved and empty data keys, escapes in the token (they count in the size),
        // and payloads on both sides of the 4096-byte limit.
        var recipients = [Recipient(token: "ok-1"), Recipient(token: "has space"), Recipient(token: #"q"uo\te"#),
                          Recipient(token: "d", data: ["from": "x", "": "y", "pushdata.k": "v", "google.z": "w"]),
                          Recipient(token: "bad token", data: ["gcm.a": "1"]),
                          Recipient(token: "own-id", mnMessageID: "mnid2m.1.2.3.4.5", data: ["mn_message_id": "ignored"])]
        for pad in 3_880...3_960 { recipients.append(Recipient(token: #"t"\#(pad)"#, data: ["pad": String(repeating: "é", count: pad / 2)])) }
        for app in [Self.cleanApp, Self.dirtyApp] {
            let job = recipientsJob(recipients, validateOnly: validateOnly)
            let prepared = try MessageComposer().prepare(job, app: app)
            #expect(prepared.sharedIsClean == (app.appID == "clean"))
            var sizes: Set<IssueCode?> = []
            for (i, r) in recipients.enumerated() {
                let want = expected(job, app: app, index: i, target: ("token", r.token), recipientData: r.data)
                #expect(prepared.compose(i) == want, "recipient \(i)")
                if case .invalid(_, _, let issues) = want { sizes.insert(issues.first?.code) } else { sizes.insert(nil) }
            }
            #expect(try MessageComposer().compose(job, app: app) == (0..<recipients.count).map(prepared.compose))
            if app.appID == "clean" {
                #expect(sizes.isSuperset(of: [nil, .payloadTooLarge, .invalidToken, .reservedDataKey]), "the cases miss a border: \(sizes)")
            }
        }
    }

    /// A clean job without options takes its App ID's sections as encoded once per configuration
    /// and writes only its notification: the bytes equal the whole message written by the generic
    /// JSON writer, whatever sections the App ID has and whichever notification fields are set.
    @Test func appSectionsEncodedOncePerConfigurationComposeTheBytesOfTheWholeMessage() throws {
        let extras: [[String: JSONValue]] = [
            [:], ["android": ["priority": "high"]],
            ["android": ["priority": "high", "ttl": "60s"], "apns": ["headers": ["apns-priority": "10"]],
             "webpush": ["headers": ["Urgency": "high"]], "fcm_options": ["analytics_label": "label"]],
            ["webpush": ["fcm_options": ["link": #"https://x.example/é"q"#]]],
        ]
        let notifications = [NotificationContent(title: "T"), NotificationContent(body: "B"),
                             NotificationContent(title: #"T "q""#, body: "é\n\u{1}", image: "https://img.example/a.png")]
        var composed = 0
        for extra in extras {
            let app = AppConfiguration(appID: "a", projectID: "p", credentialsFile: "/dev/null",
                                       defaultPayload: ["k": "v"], extraOptions: extra)
            for type in [MessageType.notification, .data] {
                for notification in type == .notification ? notifications.map(Optional.some) : [nil] {
                    let job = SendJob(jobID: "j", appID: "a", messageType: type, notification: notification,
                                      target: .recipients([Recipient(token: "t1", data: ["r": "1"])]))
                    let prepared = try MessageComposer().prepare(job, app: app)
                    #expect(prepared.sharedIsClean && prepared.message.isEmpty, "the encoded sections were not used")
                    var message = app.sections.sections(for: type)
                    if let n = notification {
                        var o: [String: JSONValue] = [:]
                        if let t = n.title { o["title"] = .string(t) }
                        if let b = n.body { o["body"] = .string(b) }
                        if let i = n.image { o["image"] = .string(i) }
                        message["notification"] = .object(o)
                    }
                    let data = ["k": "v", "r": "1", "mn_message_id": MessageID.resolve(job: job, recipientIndex: 0)]
                    message["data"] = .object(data.mapValues(JSONValue.string))
                    message["token"] = "t1"
                    guard case .message(let got) = prepared.compose(0) else {
                        Issue.record("\(extra) \(type): not composed: \(prepared.compose(0))")
                        continue
                    }
                    #expect(got.body == JSONValue.object(["message": .object(message)]).encodedBytes(), "\(extra) \(type)")
                    composed += 1
                }
            }
        }
        #expect(composed == extras.count * (notifications.count + 1))
    }

    @Test func topicsAndConditionsComposeAsTheWholeMessageChecksAroundThe2048ByteLimit() throws {
        var seen: Set<Bool> = []
        for pad in 1_880...1_960 {
            for target in [("topic", "news"), ("condition", #"'a' in topics && 'b\"' in topics"#), ("topic", "/topics/x")] {
                let data = ["pad": String(repeating: "x", count: pad)]
                var app = Self.cleanApp
                app.defaultPayload = data
                let job = SendJob(jobID: "job-2", appID: "a", notification: NotificationContent(title: "T"),
                                  target: target.0 == "topic" ? .topic(target.1) : .condition(target.1))
                let want = expected(job, app: app, index: 0, target: target, recipientData: data)
                #expect(try MessageComposer().prepare(job, app: app).compose(0) == want, "\(target) pad \(pad)")
                if case .message = want { seen.insert(true) } else { seen.insert(false) }
            }
        }
        #expect(seen == [true, false], "the pads must cross the limit")
    }

    /// The shared part's verdict, taken from the App ID's sections checked once plus the job's
    /// own members (no job options), or from the whole shared part (job options), equals checking
    /// the whole shared part, whichever member breaks a rule.
    @Test func sharedVerdictFromTheAppSectionsEqualsCheckingTheWholeSharedPart() throws {
        let extras: [[String: JSONValue]] = [
            [:], ["android": ["priority": "high"]], ["android": ["priority": "urgent"]],
            ["apns": ["headers": ["apns-priority": "10"]]], ["apns": ["headers": ["apns-priority": 10]]],
            ["webpush": ["fcm_options": ["link": "http://x.example"]]], ["fcm_options": ["analytics_label": "bad label"]],
            ["android": ["ttl": "3d"]], ["apns": ["payload": ["aps": ["sound": "a"]]]],
        ]
        let payloads: [[String: String]] = [[:], ["pushdata.k": "v"], ["google.x": "v"], ["": "v"], ["from": "v", "ok": "v"]]
        let notifications: [NotificationContent?] = [nil, NotificationContent(title: "T"),
                                                     NotificationContent(title: "T", image: "http://img.example/a.png"),
                                                     NotificationContent(title: "T", image: "https://img.example/a.png")]
        let options: [[String: JSONValue]] = [[:], ["android": ["ttl": "60s"]], ["android": ["ttl": "forever"]]]
        var verdicts: Set<Bool> = []
        for extra in extras {
            for payload in payloads {
                let app = AppConfiguration(appID: "a", projectID: "p", credentialsFile: "/dev/null", defaultPayload: payload,
                                           extraOptions: extra)
                for type in [MessageType.notification, .data] {
                    for notification in notifications where type == .notification || notification == nil {
                        for option in options {
                            let job = SendJob(jobID: "j", appID: "a", messageType: type, notification: notification,
                                              target: .recipients([Recipient(token: "t")]), options: option)
                            guard let prepared = try? MessageComposer().prepare(job, app: app) else { continue }
                            var whole = AppSections.merged(base: extra, overlay: option, type: type)
                            if let notification {
                                var o: [String: JSONValue] = ["title": .string(notification.title ?? "")]
                                if let image = notification.image { o["image"] = .string(image) }
                                whole["notification"] = .object(o)
                            }
                            whole["data"] = .object(payload.mapValues(JSONValue.string))
                            let want = MessageValidator().sharedIssues(message: whole).isEmpty
                            #expect(prepared.sharedIsClean == want, "extra \(extra) payload \(payload) \(type) \(String(describing: notification)) options \(option)")
                            verdicts.insert(want)
                        }
                    }
                }
            }
        }
        #expect(verdicts == [true, false], "the cases must give both verdicts")
    }

    @Test func changingAnAppsExtraOptionsChangesItsSections() {
        var app = Self.cleanApp
        #expect(app.sections.areClean(for: .notification))
        app.extraOptions = ["android": ["priority": "urgent"]]
        #expect(!app.sections.areClean(for: .notification))
        #expect(app.sections.sections(for: .notification)["android"] == ["priority": "urgent"])
        #expect(app.sections.sections(for: .data)["apns"]?["headers"]?["apns-push-type"] == "background")
    }

    /// The size is counted before the message is written (second audit, finding 4): recipients
    /// that replace a shared key, add keys, or carry their own id get the byte count the written
    /// message has, on both sides of the limit.
    @Test func aRecipientReplacingSharedDataIsSizedAsItsWrittenMessage() throws {
        var recipients: [Recipient] = []
        for pad in stride(from: 3_900, through: 4_010, by: 3) {
            recipients.append(Recipient(token: "r\(pad)", data: ["pushdata.source": String(repeating: "x", count: pad)]))
            recipients.append(Recipient(token: #"e\#(pad)"#, mnMessageID: "mnid2m.9.9.9.9.\(pad)",
                                        data: ["mn_message_id": "own", "new": String(repeating: "\u{7}", count: pad / 6)]))
        }
        let job = recipientsJob(recipients)
        let prepared = try MessageComposer().prepare(job, app: Self.cleanApp)
        var outcomes: Set<Bool> = []
        for (i, r) in recipients.enumerated() {
            let want = expected(job, app: Self.cleanApp, index: i, target: ("token", r.token), recipientData: r.data)
            #expect(prepared.compose(i) == want, "recipient \(i)")
            if case .message = want { outcomes.insert(true) } else { outcomes.insert(false) }
        }
        #expect(outcomes == [true, false], "the cases miss a side of the limit")
    }

    /// A 700 KB shared part and 1 000 recipients: each is refused as too large, with its own
    /// byte count, for what it adds; composing the job no longer writes 700 MB.
    @Test func aSharedPartOverTheLimitRefusesEveryRecipientWithItsSize() throws {
        let big = AppConfiguration(appID: "big", projectID: "p", credentialsFile: "/dev/null",
                                   defaultPayload: ["blob": String(repeating: "b", count: 700_000)], extraOptions: [:])
        let recipients = (0..<1_000).map { Recipient(token: "tok-\($0)") }
        let outcomes = try MessageComposer().compose(recipientsJob(recipients), app: big)
        #expect(outcomes.count == 1_000)
        for (i, outcome) in outcomes.enumerated() {
            guard case .invalid(_, _, let issues) = outcome else { Issue.record("recipient \(i) was composed"); return }
            #expect(issues.map(\.code) == [.payloadTooLarge] && issues[0].message.contains("payload is 700"), "\(issues)")
        }
    }
}
