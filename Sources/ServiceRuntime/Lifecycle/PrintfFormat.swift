import Glibc

extension String {
    /// `format` filled in by C's `vsnprintf` (`"%.1f"`, `"%04x"`): `String(format:)` without
    /// linking Foundation. The arguments must match the conversions, as with printf.
    package init(printf format: String, _ arguments: any CVarArg...) {
        var size = 128
        while true {
            var buffer = [CChar](repeating: 0, count: size)
            let needed = Int(withVaList(arguments) { vsnprintf(&buffer, size, format, $0) })
            guard needed >= 0 else {
                self = format
                return
            }
            if needed < size {
                self = String(decoding: buffer[..<needed].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                return
            }
            size = needed + 1
        }
    }
}
