/// The release version, shown by `--version` of both commands and in GetInfo; shared here
/// because daemon and ctl both depend on this target.
public enum ChatLinkVersion {
  public static let current = "0.1.0"
}
