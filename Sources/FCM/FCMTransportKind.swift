/// Which HTTP/2 client carries FCM sends (`--fcm-transport`): libnghttp2 directly (`H2Transport`,
/// the default, about 0.4x the CPU per send) or libcurl (`CurlTransport`). Access tokens are
/// fetched through libcurl either way (token endpoints are often HTTP/1.1 only).
public enum FCMTransportKind: String, Sendable, CaseIterable {
    case nghttp2
    case curl
}
