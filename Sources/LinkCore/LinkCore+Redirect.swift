import WebSocket

/// Where the backend sent us: XMPP's `<close see-other-uri=…/>` (RFC 7395 §3.6.1) ends the
/// session and names the URL the next connection goes to.
///
/// It is followed only to a URL as protected as the configured one (wss:// to wss://, ws://
/// to ws://: the dialect refuses a loopback ws:// session moved off the loopback), and at
/// most `Redirect.maxHops` times in a row without a session getting ready there, so two
/// servers sending us to each other cannot keep the link busy. Connections keep going there
/// while they succeed; one that fails before its session is ready sends the next back to the
/// configured URL, and so do new settings and a restart.
struct Redirect: Sendable, Hashable {
  /// The URL connections go to.
  var url: WebSocketURL
  /// Redirects followed in a row without a session ready.
  var hops: Int
  /// Whether the current connection's session got ready there.
  var reached = false

  /// Most redirects in a row without a ready session.
  static let maxHops = 3
}

/// Why a see-other-uri was not followed.
struct RedirectRefusal: Error {
  var reason: String
}

extension LinkCore {
  /// The URL the next connection goes to: where the backend sent us, or the configured one.
  public var connectURL: WebSocketURL { redirect?.url ?? settings.url }

  /// Takes the backend's redirect to `uri`, or says why not.
  mutating func follow(_ uri: String) -> Result<WebSocketURL, RedirectRefusal> {
    guard let url = try? WebSocketURL(parsing: uri) else {
      return .failure(
        RedirectRefusal(reason: "the backend sent us to '\(uri)', not a ws:// or wss:// URL"))
    }
    guard url.secure == settings.url.secure else {
      return .failure(
        RedirectRefusal(
          reason: "the backend sent us to \(url), which is not protected as \(settings.url) is"))
    }
    let hops = (redirect?.hops ?? 0) + 1
    guard hops <= Redirect.maxHops else {
      return .failure(
        RedirectRefusal(
          reason: "the backend sent us to \(url), after \(Redirect.maxHops) redirects in a row"))
    }
    redirect = Redirect(url: url, hops: hops)
    return .success(url)
  }

  /// A connection ended: one that went where the backend sent us and failed before its
  /// session was ready sends the next back to the configured URL.
  mutating func redirectEnded(_ outcome: ConnectionOutcome) {
    if case .redirected = outcome { return }
    if let redirect, !redirect.reached { self.redirect = nil }
  }
}
