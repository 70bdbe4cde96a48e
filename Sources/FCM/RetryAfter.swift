import FoundationEssentials
import Glibc
import PushCore

/// Parses an HTTP `Retry-After` value: delay-seconds or an HTTP-date (IMF-fixdate, RFC 850
/// and asctime forms, RFC 9110 §10.2.3). A date in the past gives zero.
public enum RetryAfter {
    /// The longest delay believed: a value from the network is never trusted beyond a day.
    public static let maximum: Duration = .seconds(86_400)

    public static func parse(_ value: String, now: Date = Date()) -> Duration? {
        let trimmed = value.trimmingWhitespace()
        if !trimmed.isEmpty, trimmed.allSatisfy(\.isASCII), trimmed.allSatisfy(\.isNumber) {
            guard let seconds = Int64(trimmed) else { return maximum }
            return min(.seconds(seconds), maximum)
        }
        guard let date = httpDate(trimmed) else { return nil }
        let delta = min(date.timeIntervalSince(now), maximum.seconds)
        return delta <= 0 ? .zero : .milliseconds(Int64((delta * 1000).rounded(.up)))
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// `Sun, 06 Nov 1994 08:49:37 GMT`, `Sunday, 06-Nov-94 08:49:37 GMT`, `Sun Nov  6 08:49:37 1994`.
    static func httpDate(_ text: String) -> Date? {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "-" }).map { $0.lowercased() }
        var day: Int?, month: Int?, year: Int?, clock: [Int]?
        for field in fields {
            if field.contains(":") {
                let parts = field.split(separator: ":").compactMap { Int($0) }
                guard parts.count == 3 else { return nil }
                clock = parts
            } else if let index = months.firstIndex(of: field) {
                month = index
            } else if let number = Int(field) {
                if day == nil, number <= 31, field.count <= 2 { day = number }
                else if year == nil { year = number < 100 ? (number < 70 ? 2000 + number : 1900 + number) : number }
                else { return nil }
            } else if field == "gmt" || field == "utc" || field.count >= 3 {
                continue // weekday name or zone
            } else {
                return nil
            }
        }
        guard let day, let month, let year, let clock, (1970...9999).contains(year),
              (1...31).contains(day), (0...23).contains(clock[0]), (0...59).contains(clock[1]), (0...60).contains(clock[2])
        else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(clock[0])
        parts.tm_min = Int32(clock[1])
        parts.tm_sec = Int32(clock[2])
        let seconds = timegm(&parts)
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}
