import CRabbitMQ
import FoundationEssentials
import Glibc

/// Owns C memory handed to librabbitmq for the duration of one call (tables, strings, bodies).
/// Everything allocated here is freed when the arena goes away.
final class CArena {
    private var blocks: [UnsafeMutableRawPointer] = []

    deinit { for block in blocks { free(block) } }

    func allocate(_ size: Int) -> UnsafeMutableRawPointer {
        let block = malloc(max(size, 1))!
        blocks.append(block)
        return block
    }

    func bytes(_ string: String) -> amqp_bytes_t {
        var utf8 = Array(string.utf8)
        return bytes(&utf8)
    }

    func bytes(_ data: Data) -> amqp_bytes_t {
        let block = allocate(data.count)
        data.copyBytes(to: block.assumingMemoryBound(to: UInt8.self), count: data.count)
        return amqp_bytes_t(len: data.count, bytes: block)
    }

    private func bytes(_ array: inout [UInt8]) -> amqp_bytes_t {
        let block = allocate(array.count)
        array.withUnsafeBytes { block.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        return amqp_bytes_t(len: array.count, bytes: block)
    }

    func cString(_ string: String) -> UnsafePointer<CChar> {
        let utf8 = Array(string.utf8CString)
        let block = allocate(utf8.count)
        utf8.withUnsafeBytes { block.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        return UnsafePointer(block.assumingMemoryBound(to: CChar.self))
    }

    /// Field names are AMQP short strings (at most 255 bytes). librabbitmq writes a longer name
    /// with a wrapped length byte, a corrupt frame; so a longer name (only possible from a
    /// wire name whose invalid UTF-8 was repaired, or from an edited export file) is cut at the
    /// last whole character within 255 bytes, and a cut name that another name already took is
    /// left out.
    func table(_ table: AMQPTable) -> amqp_table_t {
        if table.isEmpty { return amqp_table_t(num_entries: 0, entries: nil) }
        let entries = allocate(MemoryLayout<amqp_table_entry_t>.stride * table.count)
            .bindMemory(to: amqp_table_entry_t.self, capacity: table.count)
        var written = Set<String>()
        for key in table.keys.sorted() {
            let name = Self.fieldName(key)
            guard written.insert(name).inserted else { continue }
            entries[written.count - 1] = amqp_table_entry_t(key: bytes(name), value: field(table[key]!))
        }
        return amqp_table_t(num_entries: Int32(written.count), entries: entries)
    }

    /// Whole seconds since 1970 as an AMQP timestamp: before 1970 (or NaN) is 0, and a date
    /// past the 64-bit range (a wire value near 2^64 read back as a Double) is the largest one,
    /// rather than a trap when the header is published again.
    static func seconds(_ date: Date) -> UInt64 {
        let s = date.timeIntervalSince1970.rounded(.down)
        guard s > 0 else { return 0 }
        return s < 18_446_744_073_709_551_616.0 ? UInt64(s) : .max
    }

    /// `key` if it fits a short string, else its longest prefix of whole characters that does.
    static func fieldName(_ key: String) -> String {
        guard key.utf8.count > 255 else { return key }
        var length = 0
        var scalars = String.UnicodeScalarView()
        for scalar in key.unicodeScalars {
            length += String(scalar).utf8.count
            if length > 255 { break }
            scalars.append(scalar)
        }
        return String(scalars)
    }

    func field(_ value: AMQPFieldValue) -> amqp_field_value_t {
        var field = amqp_field_value_t()
        switch value {
        case .string(let s):
            field.kind = UInt8(AMQP_FIELD_KIND_UTF8.rawValue); field.value.bytes = bytes(s)
        case .bytes(let d):
            field.kind = UInt8(AMQP_FIELD_KIND_BYTES.rawValue); field.value.bytes = bytes(d)
        case .int(let i):
            field.kind = UInt8(AMQP_FIELD_KIND_I64.rawValue); field.value.i64 = i
        case .bool(let b):
            field.kind = UInt8(AMQP_FIELD_KIND_BOOLEAN.rawValue); field.value.boolean = b ? 1 : 0
        case .double(let d):
            field.kind = UInt8(AMQP_FIELD_KIND_F64.rawValue); field.value.f64 = d
        case .timestamp(let date):
            field.kind = UInt8(AMQP_FIELD_KIND_TIMESTAMP.rawValue)
            field.value.u64 = Self.seconds(date)
        case .table(let t):
            field.kind = UInt8(AMQP_FIELD_KIND_TABLE.rawValue); field.value.table = table(t)
        case .array(let items):
            field.kind = UInt8(AMQP_FIELD_KIND_ARRAY.rawValue)
            let entries = allocate(MemoryLayout<amqp_field_value_t>.stride * max(items.count, 1))
                .bindMemory(to: amqp_field_value_t.self, capacity: max(items.count, 1))
            for (index, item) in items.enumerated() { entries[index] = self.field(item) }
            field.value.array = amqp_array_t(num_entries: Int32(items.count), entries: entries)
        case .void:
            field.kind = UInt8(AMQP_FIELD_KIND_VOID.rawValue)
        }
        return field
    }

    /// Fills a C `amqp_basic_properties_t` from Swift properties.
    func properties(_ p: MessageProperties) -> amqp_basic_properties_t {
        var c = amqp_basic_properties_t()
        var flags: UInt32 = 0
        c.delivery_mode = p.persistent ? 2 : 1
        flags |= UInt32(AMQP_BASIC_DELIVERY_MODE_FLAG)
        if let v = p.contentType { c.content_type = bytes(v); flags |= UInt32(AMQP_BASIC_CONTENT_TYPE_FLAG) }
        if let v = p.contentEncoding { c.content_encoding = bytes(v); flags |= UInt32(AMQP_BASIC_CONTENT_ENCODING_FLAG) }
        if !p.headers.isEmpty { c.headers = table(p.headers); flags |= UInt32(AMQP_BASIC_HEADERS_FLAG) }
        if let v = p.priority { c.priority = v; flags |= UInt32(AMQP_BASIC_PRIORITY_FLAG) }
        if let v = p.correlationID { c.correlation_id = bytes(v); flags |= UInt32(AMQP_BASIC_CORRELATION_ID_FLAG) }
        if let v = p.replyTo { c.reply_to = bytes(v); flags |= UInt32(AMQP_BASIC_REPLY_TO_FLAG) }
        if let v = p.expiration { c.expiration = bytes(v); flags |= UInt32(AMQP_BASIC_EXPIRATION_FLAG) }
        if let v = p.messageID { c.message_id = bytes(v); flags |= UInt32(AMQP_BASIC_MESSAGE_ID_FLAG) }
        if let v = p.timestamp {
            c.timestamp = Self.seconds(v)
            flags |= UInt32(AMQP_BASIC_TIMESTAMP_FLAG)
        }
        if let v = p.type { c.type = bytes(v); flags |= UInt32(AMQP_BASIC_TYPE_FLAG) }
        if let v = p.appID { c.app_id = bytes(v); flags |= UInt32(AMQP_BASIC_APP_ID_FLAG) }
        c._flags = flags
        return c
    }
}

/// Decoding of librabbitmq's C structures into Swift values (copies; nothing points into the
/// connection's buffers afterwards).
enum CDecode {
    static func string(_ b: amqp_bytes_t) -> String {
        guard b.len > 0, let p = b.bytes else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: p, count: b.len), as: UTF8.self)
    }

    static func data(_ b: amqp_bytes_t) -> Data {
        guard b.len > 0, let p = b.bytes else { return Data() }
        return Data(bytes: p, count: b.len)
    }

    static func table(_ t: amqp_table_t) -> AMQPTable {
        var result: AMQPTable = [:]
        guard t.num_entries > 0, let entries = t.entries else { return result }
        for i in 0..<Int(t.num_entries) {
            result[string(entries[i].key)] = field(entries[i].value)
        }
        return result
    }

    static func field(_ f: amqp_field_value_t) -> AMQPFieldValue {
        switch UInt32(f.kind) {
        case AMQP_FIELD_KIND_BOOLEAN.rawValue: return .bool(f.value.boolean != 0)
        case AMQP_FIELD_KIND_I8.rawValue: return .int(Int64(f.value.i8))
        case AMQP_FIELD_KIND_U8.rawValue: return .int(Int64(f.value.u8))
        case AMQP_FIELD_KIND_I16.rawValue: return .int(Int64(f.value.i16))
        case AMQP_FIELD_KIND_U16.rawValue: return .int(Int64(f.value.u16))
        case AMQP_FIELD_KIND_I32.rawValue: return .int(Int64(f.value.i32))
        case AMQP_FIELD_KIND_U32.rawValue: return .int(Int64(f.value.u32))
        case AMQP_FIELD_KIND_I64.rawValue: return .int(f.value.i64)
        case AMQP_FIELD_KIND_U64.rawValue: return .int(Int64(truncatingIfNeeded: f.value.u64))
        case AMQP_FIELD_KIND_F32.rawValue: return .double(Double(f.value.f32))
        case AMQP_FIELD_KIND_F64.rawValue: return .double(f.value.f64)
        case AMQP_FIELD_KIND_DECIMAL.rawValue:
            let d = f.value.decimal
            return .double(Double(d.value) / pow(10, Double(d.decimals)))
        case AMQP_FIELD_KIND_UTF8.rawValue: return .string(string(f.value.bytes))
        case AMQP_FIELD_KIND_BYTES.rawValue: return .bytes(data(f.value.bytes))
        case AMQP_FIELD_KIND_TIMESTAMP.rawValue:
            return .timestamp(Date(timeIntervalSince1970: TimeInterval(f.value.u64)))
        case AMQP_FIELD_KIND_TABLE.rawValue: return .table(table(f.value.table))
        case AMQP_FIELD_KIND_ARRAY.rawValue:
            let a = f.value.array
            guard a.num_entries > 0, let entries = a.entries else { return .array([]) }
            return .array((0..<Int(a.num_entries)).map { field(entries[$0]) })
        default: return .void
        }
    }

    static func properties(_ c: amqp_basic_properties_t) -> MessageProperties {
        let flags = c._flags
        func has(_ flag: Int32) -> Bool { flags & UInt32(flag) != 0 }
        var p = MessageProperties(persistent: false)
        if has(AMQP_BASIC_CONTENT_TYPE_FLAG) { p.contentType = string(c.content_type) }
        if has(AMQP_BASIC_CONTENT_ENCODING_FLAG) { p.contentEncoding = string(c.content_encoding) }
        if has(AMQP_BASIC_HEADERS_FLAG) { p.headers = table(c.headers) }
        if has(AMQP_BASIC_DELIVERY_MODE_FLAG) { p.persistent = c.delivery_mode == 2 }
        if has(AMQP_BASIC_PRIORITY_FLAG) { p.priority = c.priority }
        if has(AMQP_BASIC_CORRELATION_ID_FLAG) { p.correlationID = string(c.correlation_id) }
        if has(AMQP_BASIC_REPLY_TO_FLAG) { p.replyTo = string(c.reply_to) }
        if has(AMQP_BASIC_EXPIRATION_FLAG) { p.expiration = string(c.expiration) }
        if has(AMQP_BASIC_MESSAGE_ID_FLAG) { p.messageID = string(c.message_id) }
        if has(AMQP_BASIC_TIMESTAMP_FLAG) { p.timestamp = Date(timeIntervalSince1970: TimeInterval(c.timestamp)) }
        if has(AMQP_BASIC_TYPE_FLAG) { p.type = string(c.type) }
        if has(AMQP_BASIC_APP_ID_FLAG) { p.appID = string(c.app_id) }
        return p
    }
}
