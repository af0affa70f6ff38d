import CYajl

/// Runs yajl 2.1 alone (no validation, no fixes), to pin down in tests the defects ``JSONReader`` works around.
/// Test support only: not part of the reader.
enum YajlProbe {
    struct Outcome: Equatable {
        /// Whether `yajl_parse` and `yajl_complete_parse` both succeeded.
        var accepted: Bool
        /// The scalar events: `integer(…)`, `double(…)`, `number(…)`, `string(<hex bytes>)`.
        var events: [String]
    }

    fileprivate final class Recorder {
        var events: [String] = []
    }

    /// Parses `text` in one chunk with the chosen number callbacks.
    static func run(_ text: [UInt8], integer: Bool = false, double: Bool = false, number: Bool = false) -> Outcome {
        let recorder = Recorder()
        var callbacks = yajl_callbacks()
        if integer {
            callbacks.yajl_integer = { context, value in
                probeRecorder(context).events.append("integer(\(value))")
                return 1
            }
        }
        if double {
            callbacks.yajl_double = { context, value in
                probeRecorder(context).events.append("double(\(value))")
                return 1
            }
        }
        if number {
            callbacks.yajl_number = { context, text, length in
                let bytes = UnsafeRawBufferPointer(start: text, count: length)
                probeRecorder(context).events.append("number(\(String(decoding: bytes, as: UTF8.self)))")
                return 1
            }
        }
        callbacks.yajl_string = { context, text, length in
            let bytes = UnsafeRawBufferPointer(start: text, count: length)
            let hex = bytes.map { String($0, radix: 16, uppercase: true) }.joined(separator: " ")
            probeRecorder(context).events.append("string(\(hex))")
            return 1
        }
        return withExtendedLifetime(recorder) {
            withUnsafePointer(to: &callbacks) { callbacks in
                let handle = yajl_alloc(callbacks, nil, Unmanaged.passUnretained(recorder).toOpaque())
                defer { yajl_free(handle) }
                var status = text.withUnsafeBufferPointer { yajl_parse(handle, $0.baseAddress, $0.count) }
                if status == yajl_status_ok { status = yajl_complete_parse(handle) }
                return Outcome(accepted: status == yajl_status_ok, events: recorder.events)
            }
        }
    }
}

private func probeRecorder(_ context: UnsafeMutableRawPointer?) -> YajlProbe.Recorder {
    Unmanaged<YajlProbe.Recorder>.fromOpaque(context!).takeUnretainedValue()
}
