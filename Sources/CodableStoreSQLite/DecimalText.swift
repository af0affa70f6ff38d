/// Exact comparison of decimal numbers written as text, for the `codablestore_decimal` collation.
package enum DecimalText {
    /// A decimal number's parts: its sign, its significant digits (no leading or trailing zeros) and the power of
    /// ten of the first of them (`123.4` is digits 1234 with exponent 2: 1.234 × 10²). Zero has no digits.
    struct Parts {
        var negative = false
        var digits: [UInt8] = []
        var exponent = 0
    }

    /// -1, 0 or 1 as `a` is less than, equal to or greater than `b` by value. Text that is not a decimal number
    /// sorts before every number; two such texts compare by their bytes.
    package static func compare(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        switch (parse(a), parse(b)) {
        case (nil, nil): return bytes(a, b)
        case (nil, _): return -1
        case (_, nil): return 1
        case (let x?, let y?): return compare(x, y)
        }
    }

    static func compare(_ x: Parts, _ y: Parts) -> Int {
        let xZero = x.digits.isEmpty
        let yZero = y.digits.isEmpty
        if xZero && yZero { return 0 }
        // Signs first (zero sits between the negatives and the positives).
        let xSign = xZero ? 0 : (x.negative ? -1 : 1)
        let ySign = yZero ? 0 : (y.negative ? -1 : 1)
        if xSign != ySign { return xSign < ySign ? -1 : 1 }
        // Same sign: compare magnitudes, then flip for negatives.
        var magnitude = 0
        if x.exponent != y.exponent {
            magnitude = x.exponent < y.exponent ? -1 : 1
        } else {
            for index in 0..<max(x.digits.count, y.digits.count) {
                let p = index < x.digits.count ? x.digits[index] : 0
                let q = index < y.digits.count ? y.digits[index] : 0
                if p != q {
                    magnitude = p < q ? -1 : 1
                    break
                }
            }
        }
        return xSign < 0 ? -magnitude : magnitude
    }

    private static func bytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        for index in 0..<min(a.count, b.count) where a[index] != b[index] {
            return a[index] < b[index] ? -1 : 1
        }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }

    static let largestExponent = 1_000_000_000_000

    /// `[+-]digits[.digits][(e|E)[+-]digits]`, with at least one digit before the exponent; nil for anything else.
    static func parse(_ text: UnsafeRawBufferPointer) -> Parts? {
        var parts = Parts()
        var index = 0
        let count = text.count
        if index < count, text[index] == UInt8(ascii: "-") || text[index] == UInt8(ascii: "+") {
            parts.negative = text[index] == UInt8(ascii: "-")
            index += 1
        }
        var sawDigit = false
        var pointSeen = false
        // Digits before the point raise the exponent of the first significant digit; zeros after the point before
        // any significant digit lower it.
        var integerDigits = 0
        var leadingFractionZeros = 0
        while index < count {
            let byte = text[index]
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                sawDigit = true
                let digit = byte - UInt8(ascii: "0")
                if parts.digits.isEmpty && digit == 0 {
                    if pointSeen { leadingFractionZeros += 1 }
                } else {
                    parts.digits.append(digit)
                    if !pointSeen { integerDigits += 1 }
                }
            } else if byte == UInt8(ascii: "."), !pointSeen {
                pointSeen = true
            } else {
                break
            }
            index += 1
        }
        guard sawDigit else { return nil }
        var exponent = 0
        if index < count, text[index] == UInt8(ascii: "e") || text[index] == UInt8(ascii: "E") {
            index += 1
            var negative = false
            if index < count, text[index] == UInt8(ascii: "-") || text[index] == UInt8(ascii: "+") {
                negative = text[index] == UInt8(ascii: "-")
                index += 1
            }
            var sawExponentDigit = false
            while index < count, text[index] >= UInt8(ascii: "0"), text[index] <= UInt8(ascii: "9") {
                sawExponentDigit = true
                // Saturated: exponents beyond any number a store holds compare equal, never out of order.
                exponent = min(exponent * 10 + Int(text[index] - UInt8(ascii: "0")), Self.largestExponent)
                index += 1
            }
            guard sawExponentDigit else { return nil }
            if negative { exponent = -exponent }
        }
        guard index == count else { return nil }
        while parts.digits.last == 0 { parts.digits.removeLast() }
        if parts.digits.isEmpty { return parts }
        parts.exponent = (integerDigits > 0 ? integerDigits - 1 : -(leadingFractionZeros + 1)) + exponent
        return parts
    }
}
