import Foundation
import Testing
@testable import FCM

@Suite(.timeLimit(.minutes(1))) struct ServiceAccountTests {
    @Test func parsesEveryField() throws {
        let account = try ServiceAccount.parse(TestKeys.serviceAccountJSON(privateKey: TestKeys.shared), file: "sa.json")
        #expect(account.projectID == "shop-prod")
        #expect(account.privateKeyID == "kid-123")
        #expect(account.clientEmail == "fcm@shop-prod.iam.gserviceaccount.com")
        #expect(account.tokenURI == "https://oauth2.googleapis.com/token")
        #expect(account.privateKey == TestKeys.shared)
    }

    @Test(arguments: ["type", "project_id", "private_key_id", "private_key", "client_email", "token_uri"])
    func missingFieldIsNamedWithTheFile(field: String) {
        #expect {
            try ServiceAccount.parse(TestKeys.serviceAccountJSON(privateKey: TestKeys.shared, dropping: field), file: "/etc/sa.json")
        } throws: { error in
            let error = error as! ServiceAccountError
            return error.field == field && error.file == "/etc/sa.json"
                && "\(error)".contains(field) && "\(error)".contains("/etc/sa.json")
        }
    }

    @Test func wrongTypeOrNonStringFieldIsRefused() {
        let wrongType = TestKeys.serviceAccountJSON(privateKey: TestKeys.shared, overriding: ["type": "authorized_user"])
        #expect(throws: ServiceAccountError.invalidField(file: "a", field: "type", reason: "expected \"service_account\": a user's "
                                                        + "gcloud login is not for servers; use a service account's key or the metadata server")) {
            try ServiceAccount.parse(wrongType, file: "a")
        }
        let otherType = TestKeys.serviceAccountJSON(privateKey: TestKeys.shared, overriding: ["type": "user"])
        #expect(throws: ServiceAccountError.invalidField(file: "a", field: "type", reason: "expected \"service_account\"")) {
            try ServiceAccount.parse(otherType, file: "a")
        }
        let numeric = TestKeys.serviceAccountJSON(privateKey: TestKeys.shared, overriding: ["project_id": 42])
        #expect(throws: ServiceAccountError.invalidField(file: "a", field: "project_id", reason: "not a string")) {
            try ServiceAccount.parse(numeric, file: "a")
        }
    }

    @Test func malformedKeyIsRefusedWithoutPrintingIt() {
        let secret = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC-secret-material"
        let json = TestKeys.serviceAccountJSON(privateKey: secret)
        #expect {
            try ServiceAccount.parse(json, file: "sa.json")
        } throws: { error in
            "\(error)".contains("private_key") && !"\(error)".contains("secret-material")
        }
    }

    @Test func notJSONIsRefused() {
        #expect(throws: ServiceAccountError.notJSON(file: "x.json")) {
            try ServiceAccount.parse(Array("{nope".utf8), file: "x.json")
        }
        #expect(throws: ServiceAccountError.unreadable(file: "/nonexistent/sa.json")) {
            try ServiceAccount.load(contentsOf: "/nonexistent/sa.json")
        }
    }

    @Test func descriptionsRedactThePrivateKey() throws {
        let account = try ServiceAccount.parse(TestKeys.serviceAccountJSON(privateKey: TestKeys.shared), file: "sa.json")
        let body = TestKeys.shared.split(separator: "\n")[1]
        for text in [String(describing: account), String(reflecting: account), "\(account)"] {
            #expect(!text.contains(body))
            #expect(text.contains("<redacted>"))
        }
    }
}
