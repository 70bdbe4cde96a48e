/// An instant as seconds since the Unix epoch, read from and written as RFC 3339 UTC text.
///
/// Pure arithmetic (no Foundation formatter): safe to use from any thread, cheap on hot paths.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var secondsSince1970: Double

    public init(secondsSince1970: Double) { self.secondsSince1970 = secondsSince1970 }

    public static func < (a: Timestamp, b: Timestamp) -> Bool { a.secondsSince1970 < b.secondsSince1970 }

    /// Days in `month` (1…12) of `year`, in the proleptic Gregorian calendar.
    static func days(inMonth month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; nil for anything else, including a
    /// day the month does not have (`2026-02-30`) and a leap second (`23:59:60`).
    public init?(rfc3339 text: String) {
        let b = Array(text.utf8)
        guard b.count >= 20 else { return nil }
        func digits(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= b.count else { return nil }
            var v = 0
            for i in from..<(from + count) {
                guard (48...57).contains(b[i]) else { return nil }
                v = v * 10 + Int(b[i] - 48)
            }
            return v
        }
        guard let year = digits(0, 4), b[4] == 45, let month = digits(5, 2), b[7] == 45, let day = digits(8, 2),
              b[10] == 84 || b[10] == 116 || b[10] == 32,
              let hour = digits(11, 2), b[13] == 58, let minute = digits(14, 2), b[16] == 58, let second = digits(17, 2),
              (1...12).contains(month), day >= 1, day <= Self.days(inMonth: month, year: year), hour < 24, minute < 60,
              second < 60  // a leap second or a day the month has not is refused, not rolled over
        else { return nil }
        var i = 19
        var fraction = 0.0
        if i < b.count, b[i] == 46 {
            i += 1
            var scale = 0.1
            let start = i
            while i < b.count, (48...57).contains(b[i]) {
                fraction += Double(b[i] - 48) * scale
                scale /= 10
                i += 1
            }
            if i == start { return nil }
        }
        guard i < b.count else { return nil }
        var offset = 0
        if b[i] == 90 || b[i] == 122 {
            i += 1
        } else if b[i] == 43 || b[i] == 45 {
            guard let oh = digits(i + 1, 2), b.count > i + 3, b[i + 3] == 58, let om = digits(i + 4, 2) else { return nil }
            offset = (oh * 60 + om) * 60 * (b[i] == 43 ? 1 : -1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = Timestamp.daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
        self.secondsSince1970 = Double(seconds) + fraction
    }

    /// RFC 3339 UTC with whole seconds, e.g. `2026-11-29T21:00:00Z`. Years 0001…9999 only: a
    /// hostile or broken value is clamped, never trapped on.
    public var description: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(20)
        writeRFC3339(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `description` as UTF-8 without building the string (the worker stamps every result).
    public func writeRFC3339(to out: inout [UInt8]) {
        let clamped = secondsSince1970.isFinite ? min(max(secondsSince1970, -62_135_596_800), 253_402_300_799) : 0
        let total = Int(clamped.rounded(.down))
        var days = total / 86_400
        var rest = total % 86_400
        if rest < 0 { rest += 86_400; days -= 1 }
        let (y, m, d) = Timestamp.civilFromDays(days)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        digits(y, 4)
        out.append(UInt8(ascii: "-"))
        digits(m, 2)
        out.append(UInt8(ascii: "-"))
        digits(d, 2)
        out.append(UInt8(ascii: "T"))
        digits(rest / 3600, 2)
        out.append(UInt8(ascii: ":"))
        digits(rest / 60 % 60, 2)
        out.append(UInt8(ascii: ":"))
        digits(rest % 60, 2)
        out.append(UInt8(ascii: "Z"))
    }

    // Howard Hinnant's algorithms, proleptic Gregorian calendar.
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
