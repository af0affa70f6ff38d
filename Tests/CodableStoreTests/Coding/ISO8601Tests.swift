@testable import CodableStoreCore
@testable import CodableStoreImport
import CodableStore
import Foundation
import Testing

/// ISO8601.parse against a second reader of the same grammar (the position-by-position one it replaced), on
/// timestamps of every shape and on those with a byte changed, and against Foundation's calendar.
@Suite struct ISO8601Tests {
    /// The reference: reads the grammar one position at a time.
    enum Reference {
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

        static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }
        static func daysInMonth(_ year: Int, _ month: Int) -> Int {
            switch month {
            case 2: isLeap(year) ? 29 : 28
            case 4, 6, 9, 11: 30
            default: 31
            }
        }
        static func daysFromCivil(_ year: Int, _ month: Int, _ day: Int) -> Int { ISO8601.daysFromCivil(year, month, day) }
    }

    static func parse(_ text: String, _ reader: (UnsafeBufferPointer<UInt8>) -> Double?) -> Double? {
        Array(text.utf8).withUnsafeBufferPointer(reader)
    }

    /// A random timestamp in one of the accepted shapes (and sometimes out of range: day 31 of a short month,
    /// hour 24, second 60).
    static func timestamp(_ random: inout SystemRandomNumberGenerator) -> String {
        func pad(_ value: Int, _ width: Int) -> String {
            String(repeating: "0", count: max(0, width - String(value).count)) + String(value)
        }
        var text = pad(Int.random(in: 0...9999, using: &random), 4) + "-" + pad(Int.random(in: 0...13, using: &random), 2) + "-"
            + pad(Int.random(in: 0...31, using: &random), 2) + ["T", "t", " "].randomElement(using: &random)!
            + pad(Int.random(in: 0...24, using: &random), 2) + ":" + pad(Int.random(in: 0...59, using: &random), 2) + ":"
            + pad(Int.random(in: 0...60, using: &random), 2)
        if Bool.random(using: &random) {
            text += [".", ","].randomElement(using: &random)! + String(Int.random(in: 0...999_999, using: &random))
        }
        switch Int.random(in: 0...3, using: &random) {
        case 0: text += "Z"
        case 1: text += "z"
        case 2: text += ["+", "-"].randomElement(using: &random)! + pad(Int.random(in: 0...24, using: &random), 2) + ":" + pad(Int.random(in: 0...60, using: &random), 2)
        default: text += ["+", "-"].randomElement(using: &random)! + pad(Int.random(in: 0...24, using: &random), 2) + pad(Int.random(in: 0...60, using: &random), 2)
        }
        return text
    }

    @Test func agreesWithTheReferenceOnEveryShapeAndOnChangedBytes() {
        var random = SystemRandomNumberGenerator()
        var accepted = 0
        let alphabet = Array("0123456789-:T tzZ+.,x".utf8) + [0xC3, 0x00]
        for _ in 0..<20_000 {
            let text = Self.timestamp(&random)
            let expected = Self.parse(text, Reference.parse)
            #expect(Self.parse(text, ISO8601.parse) == expected, "\(text)")
            if expected != nil { accepted += 1 }
            // The same with one byte changed, one removed, or one added.
            var bytes = Array(text.utf8)
            switch Int.random(in: 0...2, using: &random) {
            case 0: bytes[Int.random(in: bytes.indices, using: &random)] = alphabet.randomElement(using: &random)!
            case 1: bytes.remove(at: Int.random(in: bytes.indices, using: &random))
            default: bytes.insert(alphabet.randomElement(using: &random)!, at: Int.random(in: 0...bytes.count, using: &random))
            }
            let changed = bytes.withUnsafeBufferPointer(Reference.parse)
            #expect(bytes.withUnsafeBufferPointer(ISO8601.parse) == changed, "\(String(decoding: bytes, as: UTF8.self))")
        }
        #expect(accepted > 2_000)  // the shapes above are valid often enough to compare values, not only refusals
    }

    @Test func secondsAgreeWithFoundationsCalendar() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        var random = SystemRandomNumberGenerator()
        // From 1583: before the Gregorian reform, Foundation's calendar is Julian; the parser's is proleptic Gregorian.
        for _ in 0..<2_000 {
            let components = DateComponents(
                year: Int.random(in: 1583...9999, using: &random), month: Int.random(in: 1...12, using: &random),
                day: Int.random(in: 1...28, using: &random), hour: Int.random(in: 0...23, using: &random),
                minute: Int.random(in: 0...59, using: &random), second: Int.random(in: 0...59, using: &random))
            let date = try #require(calendar.date(from: components))
            let text = String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", components.year!, components.month!, components.day!,
                components.hour!, components.minute!, components.second!)
            #expect(Self.parse(text, ISO8601.parse) == date.timeIntervalSince1970, "\(text)")
        }
    }
}
