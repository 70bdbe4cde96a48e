import Foundation

// Reader "dlq-line": any bytes as a line of a `dlq export` file give a record or a DecodingError.
// A record read back is written again identically, and its headers encode as the AMQP field table
// `dlq import` / `replay` would publish (through librabbitmq) without a crash.

func fuzzDeadLetterLine(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard let record = try? DeadLetterRecord.decode(line: bytes) else { return }
    let line = record.line
    guard let again = try? DeadLetterRecord.decode(line: Array(line.utf8)) else {
        preconditionFailure("a record's own line does not read back: \(line)")
    }
    precondition(again.line == line, "export line round trip changed the line")
    let arena = CArena()
    var properties = arena.properties(record.properties)
    _ = encodeTable(&properties.headers)
}
