import Foundation

// Reader "fcm-response": any bytes as an FCM answer (HTTP status from the first two bytes, a
// Retry-After value up to the first 0x00, the rest as the body) give an outcome, never a crash;
// a 2xx is always sent, and no Retry-After from the network is believed beyond a day.

func fuzzFCMResponse(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard bytes.count >= 2 else { return }
    let status = (Int(bytes[0]) << 8 | Int(bytes[1])) % 600
    let rest = bytes[2...]
    let split = rest.firstIndex(of: 0)
    let retryAfter = split.map { String(decoding: rest[..<$0], as: UTF8.self) }
    let body = Array(split.map { rest[($0 + 1)...] } ?? rest)
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let outcome = FCMResponseDecoder.decode(httpStatus: status, body: body, retryAfter: retryAfter, now: now)
    if (200..<300).contains(status) {
        guard case .sent = outcome else { preconditionFailure("HTTP \(status) gave \(outcome)") }
    } else {
        precondition(outcome.failure?.httpStatus == status, "the failure lost its HTTP status: \(outcome)")
    }
    if case .retryable(_, let after?) = outcome {
        precondition(after >= .zero && after <= RetryAfter.maximum, "Retry-After \(retryAfter ?? "") believed as \(after)")
    }
}
