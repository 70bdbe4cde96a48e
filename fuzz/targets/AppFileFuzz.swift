// Reader "appfile": any bytes as the App ID file give a registry or a ContractError; every App
// ID read back is one the file named, and a fixed job composes against it without a crash.

func fuzzAppFile(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard let registry = try? AppRegistry.decode(bytes) else { return }
    for appID in registry.appIDs {
        guard let app = registry[appID] else { preconditionFailure("listed App ID \(appID) cannot be looked up") }
        precondition(app.appID == appID, "App ID \(appID) returned \(app.appID)")
        let job = #"{"job_id":"fuzz","app_id":"a","notification":{"title":"T","body":"B"},"recipients":[{"token":"t"}]}"#
        if let job = try? SendJob.decode(Array(job.utf8)) { _ = try? MessageComposer().compose(job, app: app) }
    }
}
