/// A fast, allocation-free reader of ISO 8601 / RFC 3339 timestamps, used by
/// ``StoreDecoder/DateDecodingStrategy/iso8601``.
///
/// Accepts `YYYY-MM-DDTHH:MM:SS`, optional fractional seconds (any number of digits), and `Z`, `z` or an
/// offset `±HH:MM` / `±HHMM`; `t` and a space are accepted as the date-time separator. Dates are proleptic
/// Gregorian. Foundation's formatter costs microseconds per date; a dump has millions of them.
package enum ISO8601 {
    /// Seconds since 1970-01-01T00:00:00Z, or nil if the UTF-8 `bytes` are not such a timestamp.
    package static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        // `YYYY-MM-DDTHH:MM:SS` has its digits and separators at fixed places: read them in place (two dates a
        // record in a dump; a reader that moved a position through closures took about 480 instructions a date).
        let count = bytes.count
        guard count >= 20, let base = bytes.baseAddress else { return nil }
        @inline(__always) func digit(_ offset: Int) -> Int {
            let value = base[offset] &- 0x30
            return value < 10 ? Int(value) : -1_000_000  // one bad digit makes the field negative
        }
        @inline(__always) func two(_ offset: Int) -> Int { digit(offset) * 10 + digit(offset + 1) }
        let year = two(0) * 100 + two(2)
        let month = two(5)
        let day = two(8)
        let hour = two(11)
        let minute = two(14)
        let second = two(17)
        let separator = base[10]
        guard base[4] == 0x2D, base[7] == 0x2D, separator == 0x54 || separator == 0x74 || separator == 0x20,  // - - T t space
            base[13] == 0x3A, base[16] == 0x3A,  // : :
            year >= 0, month >= 1, month <= 12, day >= 1, day <= daysInMonth(year, month), hour >= 0, hour <= 23,
            minute >= 0, minute <= 59, second >= 0, second <= 60
        else { return nil }
        var position = 19
        var fraction = 0.0
        if base[position] == 0x2E || base[position] == 0x2C {  // . ,
            position += 1
            var scale = 0.1
            let start = position
            while position < count, base[position] &- 0x30 < 10 {
                fraction += Double(base[position] &- 0x30) * scale
                scale /= 10
                position += 1
            }
            guard position > start, position < count else { return nil }
        }
        var offsetSeconds = 0
        switch base[position] {
        case 0x5A, 0x7A:  // Z z
            position += 1
        case 0x2B, 0x2D:  // + -
            let sign = base[position] == 0x2D ? -1 : 1
            position += 1
            // HH:MM or HHMM
            let colon = position + 2 < count && base[position + 2] == 0x3A ? 1 : 0
            guard position + 4 + colon <= count else { return nil }
            let offsetHours = two(position)
            let offsetMinutes = two(position + 2 + colon)
            guard offsetHours >= 0, offsetHours <= 23, offsetMinutes >= 0, offsetMinutes <= 59 else { return nil }
            offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
            position += 4 + colon
        default:
            return nil
        }
        guard position == count else { return nil }
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
