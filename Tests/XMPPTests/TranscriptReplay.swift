import XMPP

/// A line of a transcript captured from a real server (`ProsodyTranscripts`,
/// `EjabberdTranscripts`).
typealias TranscriptLine = ProsodyTranscripts.Line

/// Feeds the server's frames of `transcript` to a negotiation (the captures' client nonce)
/// until it finishes: what it sent, as text, and its final action.
func replay(_ transcript: [TranscriptLine], _ settings: NegotiationSettings) throws -> (
  sent: [String], final: NegotiationAction?
) {
  var negotiation = StreamNegotiation(
    settings: settings, clientNonce: "fyko+d2lbbFgONRv9qkxdawL", crypto: try OpenSSLSCRAM.crypto()
  )
  var sent: [String] = []
  var final: NegotiationAction?
  func perform(_ actions: [NegotiationAction]) {
    for action in actions {
      switch action {
      case .send(let element): sent.append(XMLWriter.string(element))
      case .authenticated, .resumptionRefused: break
      default: final = action
      }
    }
  }
  perform(negotiation.start())
  let parser = XMLFrameParser()
  for case .server(let frame) in transcript where !negotiation.isFinished {
    perform(negotiation.receive(try parser.parse(frame: Array(frame.utf8)).get()))
  }
  return (sent, final)
}

/// What the client of `transcript` sent, in order.
func clientLines(_ transcript: [TranscriptLine]) -> [String] {
  transcript.compactMap { if case .client(let text) = $0 { text } else { nil } }
}
