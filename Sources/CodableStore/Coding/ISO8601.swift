/// A fast, allocation-free reader of ISO 8601 / RFC 3339 timestamps, used by
/// ``StoreDecoder/DateDecodingStrategy/iso8601``.
///
/// Accepts `YYYY-MM-DDTHH:MM:SS`, optional fractional seconds (any number of digits), and `Z`, `z` or an
/// offset `±HH:MM` / `±HHMM`; `t` and a space are accepted as the date-time separator. Dates are proleptic
/// Gregorian. Foundation's formatter costs microseconds per date; a dump has millions of them.
package enum ISO8601 {
    /// Seconds since 1970-01-01T00:00:00Z, or nil if the UTF-8 `bytes` are not such a timestamp.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        var position = 0
        func digits(_ count: Int) -> Int? {
            guard position + count <= bytes.count else { return nil }
            var value = 0
            for offset in 0..<count {
                let byte = bytes[position + offset]
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            position += count
            return value
        }
        func expect(_ byte: UInt8) -> Bool {
            guard position < bytes.count, bytes[position] == byte else { return false }
            position += 1
            return true
        }
        guard let year = digits(4), expect(0x2D), let month = digits(2), expect(0x2D), let day = digits(2) else { return nil }
        guard position < bytes.count, [0x54, 0x74, 0x20].contains(bytes[position]) else { return nil }  // T t space
        position += 1
        guard let hour = digits(2), expect(0x3A), let minute = digits(2), expect(0x3A), let second = digits(2) else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year, month), hour <= 23, minute <= 59, second <= 60 else {
            return nil
        }
        var fraction = 0.0
        if position < bytes.count, bytes[position] == 0x2E || bytes[position] == 0x2C {
            position += 1
            var scale = 0.1
            let start = position
            while position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39 {
                fraction += Double(bytes[position] - 0x30) * scale
                scale /= 10
                position += 1
            }
            guard position > start else { return nil }
        }
        guard position < bytes.count else { return nil }
        var offsetSeconds = 0
        switch bytes[position] {
        case 0x5A, 0x7A:  // Z z
            position += 1
        case 0x2B, 0x2D:  // + -
            let sign = bytes[position] == 0x2D ? -1 : 1
            position += 1
            guard let offsetHours = digits(2) else { return nil }
            _ = expect(0x3A)
            guard let offsetMinutes = digits(2), offsetHours <= 23, offsetMinutes <= 59 else { return nil }
            offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
        default:
            return nil
        }
        guard position == bytes.count else { return nil }
        let days = daysFromCivil(year, month, day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Double(seconds) + fraction
    }

    private static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    private static func daysInMonth(_ year: Int, _ month: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    static func daysFromCivil(_ year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

extension ISO8601 {
    /// `2015-06-05T09:52:26Z`, or with fractional seconds (up to microseconds, trailing zeros dropped) when
    /// the time has them: `2015-06-05T09:52:26.25Z`.
    package static func string(secondsSince1970 value: Double) -> String {
        var seconds = value.rounded(.down)
        var micros = Int(((value - seconds) * 1_000_000).rounded())
        if micros == 1_000_000 {
            seconds += 1
            micros = 0
        }
        let total = Int(seconds)
        var days = total / 86_400
        var rest = total % 86_400
        if rest < 0 {
            rest += 86_400
            days -= 1
        }
        let (year, month, day) = civilFromDays(days)
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        var text = "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(rest / 3600, 2)):\(pad(rest % 3600 / 60, 2)):\(pad(rest % 60, 2))"
        if micros > 0 {
            var fraction = pad(micros, 6)
            while fraction.hasSuffix("0") { fraction.removeLast() }
            text += "." + fraction
        }
        return text + "Z"
    }

    /// The inverse of `daysFromCivil` (Howard Hinnant's civil_from_days).
    static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPrime = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthPrime + 2) / 5 + 1
        let month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
