// libFuzzer entry point for every reader: `FUZZ_READER` names the one this process fuzzes
// (fuzz/run.sh sets it). Built by fuzz/run.sh from the readers' own sources in one module.
#if canImport(Glibc)
import Glibc
#endif

/// The readers a fuzz run can drive, by the name `FUZZ_READER` gives.
enum FuzzReader: String, CaseIterable {
    case job, appfile, event, dlqline = "dlq-line", amqptable = "amqp-table", fcmresponse = "fcm-response"

    static let selected: FuzzReader = {
        guard let raw = getenv("FUZZ_READER").map({ String(cString: $0) }), let reader = FuzzReader(rawValue: raw) else {
            fatalError("set FUZZ_READER to one of: \(allCases.map(\.rawValue).joined(separator: " "))")
        }
        return reader
    }()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    switch FuzzReader.selected {
    case .job: fuzzJob(bytes)
    case .appfile: fuzzAppFile(bytes)
    case .event: fuzzEvent(bytes)
    case .dlqline: fuzzDeadLetterLine(bytes)
    case .amqptable: fuzzAMQPTable(bytes)
    case .fcmresponse: fuzzFCMResponse(bytes)
    }
    return 0
}
