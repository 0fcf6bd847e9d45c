import CSystemd

/// Sockets systemd passed at start (socket activation, sd_listen_fds(3)).
public enum SocketActivation {
  /// The one listening socket systemd passed, or nil when it passed none (or several: the
  /// daemon expects exactly one, its control socket). Unsets $LISTEN_FDS so children do not
  /// inherit it.
  public static func inheritedSocket() -> Int32? {
    sd_listen_fds(1) == 1 ? SD_LISTEN_FDS_START : nil
  }
}
