// Reader "job": any bytes through the JSON parser, the send-job decoder, the composer and the
// validator give a value or a ContractError — never a crash, a hang or a leak.

func fuzzJob(_ bytes: UnsafeBufferPointer<UInt8>) {
    if let value = try? JSONValue.parse(bytes) {
        // What the writer prints must read back equal.
        let again = try? JSONValue.parse(value.encodedBytes())
        precondition(again == value, "JSON round trip changed the value")
    }
    // The scanner of the common shape accepts only what the full decoder reads, and reads it the same.
    if let scanned = SendJobScanner.scan(bytes) {
        precondition((try? SendJob.decodeThroughTree(bytes)) == scanned, "the scanner and the full decoder disagree")
    }
    if let job = try? SendJob.decode(bytes) {
        precondition((try? SendJob.decode(job.encoded())) == job, "job round trip changed the job")
        let app = AppConfiguration(appID: job.appID, projectID: "p", credentialsFile: "/dev/null",
                                   defaultPayload: ["pushdata.source": "fuzz"], extraOptions: ["android": ["priority": "high"]])
        _ = try? MessageComposer().compose(job, app: app)
    }
}
