import CRabbitMQ
import Foundation
import Testing
@testable import AMQP

/// Header tables as librabbitmq writes them: what we encode always reads back.
@Suite(.timeLimit(.minutes(1))) struct FieldTableEncodingTests {
    /// CArena + amqp_encode_table, then amqp_decode_table + CDecode: the wire round trip.
    func wireRoundTrip(_ table: AMQPTable) throws -> AMQPTable {
        let arena = CArena()
        var c = arena.table(table)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var offset = 0
        let encoded = buffer.withUnsafeMutableBytes { amqp_encode_table(amqp_bytes_t(len: $0.count, bytes: $0.baseAddress), &c, &offset) }
        try #require(encoded == 0)
        var pool = amqp_pool_t()
        init_amqp_pool(&pool, 4096)
        defer { empty_amqp_pool(&pool) }
        var output = amqp_table_t()
        var read = 0
        let decoded = buffer.withUnsafeMutableBytes { amqp_decode_table(amqp_bytes_t(len: offset, bytes: $0.baseAddress), &pool, &output, &read) }
        try #require(decoded == 0, "a table we encoded does not decode")
        #expect(read == offset)
        return CDecode.table(output)
    }

    // Found by fuzz/run.sh (amqp-table): a wire name of 100 invalid UTF-8 bytes is repaired into
    // 100 U+FFFD (300 bytes); librabbitmq wrote its length as 300 mod 256 and the frame was corrupt.
    @Test func aNameLongerThan255BytesIsCutAtACharacterBoundaryNotWrittenCorrupt() throws {
        let long = String(repeating: "\u{FFFD}", count: 100)  // 300 bytes
        let back = try wireRoundTrip([long: "v", "push-attempt": 3])
        #expect(back == [String(repeating: "\u{FFFD}", count: 85): "v", "push-attempt": 3])  // 255 bytes
    }

    @Test func twoLongNamesWithTheSamePrefixKeepOneEntryAndTheTableStaysReadable() throws {
        let prefix = String(repeating: "a", count: 255)
        let back = try wireRoundTrip([prefix + "1": "first", prefix + "2": "second", "x": true])
        #expect(back == [prefix: "first", "x": true])
    }

    @Test func aNameOfExactly255BytesIsKept() throws {
        let name = String(repeating: "é", count: 127) + "a"  // 255 bytes
        #expect(try wireRoundTrip([name: 1]) == [name: 1])
    }
}

extension FieldTableEncodingTests {
    // A timestamp header of 2^64 - 1 reads back as a Date of 1.8446744073709552e19 s, which is
    // 2^64 exactly: converting it back to UInt64 trapped when the header was published again
    // (dlq replay / import keep every header).
    @Test func aTimestampAtTheTopOfTheRangeIsWrittenAgainWithoutATrap() throws {
        let top = Date(timeIntervalSince1970: Double(UInt64.max))
        #expect(CArena.seconds(top) == .max)
        #expect(CArena.seconds(Date(timeIntervalSince1970: -5)) == 0)
        #expect(CArena.seconds(Date(timeIntervalSince1970: 1_700_000_000.9)) == 1_700_000_000)
        let back = try wireRoundTrip(["t": .timestamp(top)])
        #expect(back == ["t": .timestamp(Date(timeIntervalSince1970: Double(UInt64.max)))])
    }
}
