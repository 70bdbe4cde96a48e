import CRabbitMQ
import FoundationEssentials

/// The frames of several `basic.publish`es gathered in one buffer, to leave in one `send`:
/// librabbitmq writes each frame of a publish (method, content header, body) with a system call of
/// its own, three per publish, where a drained batch of publishes needs one.
///
/// The method arguments and the properties are librabbitmq's own encodings
/// (`amqp_encode_method`, `amqp_encode_properties`); this type adds only the AMQP 0-9-1 frame
/// envelope around them (type, channel, size, payload, frame-end) and splits bodies into frames
/// of at most `frameMax` bytes, as `amqp_basic_publish` does.
struct PublishFrames {
    private(set) var bytes: [UInt8] = []
    /// Publishes appended since the last `removeAll`.
    private(set) var count = 0
    /// The connection's negotiated frame size (envelope included).
    let frameMax: Int

    init(frameMax: Int) {
        self.frameMax = max(frameMax, 4096)
    }

    var isEmpty: Bool { count == 0 }

    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: bytes.capacity <= 1 << 20)
        count = 0
    }

    /// Appends the three kinds of frames of one publish; throws when a field cannot be encoded
    /// (a name over 255 bytes, properties larger than a frame), leaving the buffer as it was.
    mutating func append(channel: UInt16, exchange: String, routingKey: String, body: Data,
                         properties: MessageProperties, mandatory: Bool) throws(AMQPError) {
        let start = bytes.count
        do {
            try appendMethod(channel: channel, exchange: exchange, routingKey: routingKey, mandatory: mandatory)
            try appendHeader(channel: channel, bodySize: body.count, properties: properties)
            appendBody(channel: channel, body)
        } catch {
            bytes.removeSubrange(start...)
            throw error
        }
        count += 1
    }

    private static let methodFrame: UInt8 = 1
    private static let headerFrame: UInt8 = 2
    private static let bodyFrame: UInt8 = 3
    private static let frameEnd: UInt8 = 0xCE
    /// Type (1), channel (2), size (4) before the payload; frame-end (1) after it.
    private static let envelope = 8

    private mutating func appendMethod(channel: UInt16, exchange: String, routingKey: String,
                                       mandatory: Bool) throws(AMQPError) {
        guard exchange.utf8.count <= 255, routingKey.utf8.count <= 255 else {
            throw .protocolError("an exchange name or routing key over 255 bytes cannot be published")
        }
        let sizeAt = openFrame(Self.methodFrame, channel: channel)
        appendBig(AMQPMethod.basicPublish, size: 4)
        appendBig(UInt16(0), size: 2)  // ticket
        appendShortString(exchange)
        appendShortString(routingKey)
        bytes.append(mandatory ? 1 : 0)  // bits: mandatory, immediate (0)
        closeFrame(sizeAt: sizeAt)
    }

    private mutating func appendHeader(channel: UInt16, bodySize: Int, properties: MessageProperties) throws(AMQPError) {
        let arena = CArena()
        var decoded = arena.properties(properties)
        defer { withExtendedLifetime(arena) {} }
        let sizeAt = openFrame(Self.headerFrame, channel: channel)
        appendBig(UInt16(AMQP_BASIC_CLASS), size: 2)
        appendBig(UInt16(0), size: 2)  // weight
        appendBig(UInt64(bodySize), size: 8)
        // Most properties fit in 4 KiB on the stack; larger ones (long dead-letter reasons) get
        // the room of a whole frame.
        var written = withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 8) { scratch in
            encodeProperties(&decoded, into: scratch)
        }
        if written < 0 {
            let room = frameMax - Self.envelope - 12
            let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: room, alignment: 8)
            defer { scratch.deallocate() }
            written = encodeProperties(&decoded, into: scratch)
        }
        guard written >= 0 else {
            throw .protocolError("message properties do not fit in one frame: \(AMQPConnection.statusText(Int32(written)))")
        }
        closeFrame(sizeAt: sizeAt)
    }

    /// librabbitmq's encoding of `decoded` appended to `bytes` (via `scratch`); its byte count,
    /// or librabbitmq's negative status when it does not fit.
    private mutating func encodeProperties(_ decoded: inout amqp_basic_properties_t, into scratch: UnsafeMutableRawBufferPointer) -> Int {
        let written = Int(amqp_encode_properties(UInt16(AMQP_BASIC_CLASS), &decoded,
                                                 amqp_bytes_t(len: scratch.count, bytes: scratch.baseAddress)))
        if written >= 0 { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[..<written])) }
        return written
    }

    private mutating func appendBody(channel: UInt16, _ body: Data) {
        let chunk = frameMax - Self.envelope
        var offset = 0
        while offset < body.count {
            let end = min(offset + chunk, body.count)
            let sizeAt = openFrame(Self.bodyFrame, channel: channel)
            bytes.append(contentsOf: body[body.startIndex + offset ..< body.startIndex + end])
            closeFrame(sizeAt: sizeAt)
            offset = end
        }
    }

    /// Writes the frame's type and channel and a size to fill in; returns where the size goes.
    private mutating func openFrame(_ type: UInt8, channel: UInt16) -> Int {
        bytes.append(type)
        appendBig(channel, size: 2)
        let sizeAt = bytes.count
        appendBig(UInt32(0), size: 4)
        return sizeAt
    }

    private mutating func closeFrame(sizeAt: Int) {
        let size = UInt32(bytes.count - sizeAt - 4)
        for i in 0..<4 { bytes[sizeAt + i] = UInt8(truncatingIfNeeded: size >> (24 - 8 * i)) }
        bytes.append(Self.frameEnd)
    }

    private mutating func appendShortString(_ text: String) {
        bytes.append(UInt8(text.utf8.count))
        bytes.append(contentsOf: text.utf8)
    }

    private mutating func appendBig<T: FixedWidthInteger>(_ value: T, size: Int) {
        for i in stride(from: size - 1, through: 0, by: -1) { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * i))) }
    }
}
