import CRabbitMQ
import Foundation

// Reader "amqp-table": any bytes as an AMQP field table on the wire (message headers of a
// delivery) are decoded by librabbitmq's amqp_decode_table, then converted by CDecode; the Swift
// value must encode back (CArena + amqp_encode_table) to bytes that decode to the same bytes again.

func fuzzAMQPTable(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard let first = decodeTable(bytes) else { return }
    let arena = CArena()
    var table = arena.table(first)
    guard let encoded = encodeTable(&table) else { return }  // too big for the buffer: not a decoder question
    guard let second = encoded.withUnsafeBufferPointer({ decodeTable($0) }) else {
        preconditionFailure("a table we encoded does not decode")
    }
    var table2 = arena.table(second)
    precondition(encodeTable(&table2) == encoded, "table round trip changed the bytes")
}

/// amqp_decode_table + CDecode.table; nil when librabbitmq refuses the bytes.
func decodeTable(_ bytes: UnsafeBufferPointer<UInt8>) -> AMQPTable? {
    var pool = amqp_pool_t()
    init_amqp_pool(&pool, 4096)
    defer { empty_amqp_pool(&pool) }
    var output = amqp_table_t()
    var offset = 0
    let raw = amqp_bytes_t(len: bytes.count, bytes: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
    guard amqp_decode_table(raw, &pool, &output, &offset) == 0 else { return nil }
    return CDecode.table(output)
}

/// amqp_encode_table into a 64 KiB buffer; nil when it does not fit.
func encodeTable(_ table: inout amqp_table_t) -> [UInt8]? {
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    var offset = 0
    let status = buffer.withUnsafeMutableBytes { pointer in
        amqp_encode_table(amqp_bytes_t(len: pointer.count, bytes: pointer.baseAddress), &table, &offset)
    }
    return status == 0 ? Array(buffer[..<offset]) : nil
}
