/// The release version, shown by `--version` of both commands, in GetInfo and in the metrics'
/// build info: the product's, so it lives with the product's contract.
public enum ChatLinkVersion {
  /// The version of this build.
  public static let current = "0.1.0"
}
