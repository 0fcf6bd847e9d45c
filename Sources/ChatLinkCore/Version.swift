/// The release version, shown by `--version` and in GetInfo.
public enum ChatLinkVersion {
  public static let current = "0.1.0"
}
