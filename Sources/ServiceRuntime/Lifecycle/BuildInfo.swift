/// What this build is, for `push_connector_build_info` and logs.
public enum BuildInfo {
    /// The release this source tree is (bumped when a release is cut).
    public static let version = "0.1.0"
}
