/// Frames captured from ejabberd 23.01 (Debian) over RFC 7395 WebSocket (`ejabberd_http_ws`),
/// with the client of `Tests/Fixtures/prosody.py` speaking the frames listed as `client` (on
/// loopback ws://; user `user`, password `pencil`, stored as it is; the SCRAM client nonce
/// `fyko+d2lbbFgONRv9qkxdawL`, its proof computed with Python's hashlib): `.venv/bin/python
/// Tests/Fixtures/ejabberd.py SCRAM-SHA-256` captures the same way. Prosody offers SCRAM-SHA-1
/// only; this is the SCRAM-SHA-256 exchange with a real server.
enum EjabberdTranscripts {
  /// The mechanisms ejabberd offers (SCRAM-SHA-512 first), SCRAM-SHA-256, bind, stream
  /// management with resumption, `<close/>`.
  static let scramSHA256: [TranscriptLine] = [
    .client(
      "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='localhost' version='1.0'/>"
    ),
    .server(
      "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' id='2613397221445240714' version='1.0' xml:lang='en' from='localhost'/>"
    ),
    .server(
      "<stream:features xmlns:stream='http://etherx.jabber.org/streams'><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>DIGEST-MD5</mechanism><mechanism>PLAIN</mechanism><mechanism>SCRAM-SHA-512</mechanism><mechanism>SCRAM-SHA-256</mechanism><mechanism>SCRAM-SHA-1</mechanism><mechanism>X-OAUTH2</mechanism></mechanisms></stream:features>"
    ),
    .client(
      "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='SCRAM-SHA-256'>biwsbj11c2VyLHI9ZnlrbytkMmxiYkZnT05Sdjlxa3hkYXdM</auth>"
    ),
    .server(
      "<challenge xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>cj1meWtvK2QybGJiRmdPTlJ2OXFreGRhd0xHL1hkQVR5eVFESlVvdkhrN0lrNXRnPT0scz1YcFcyTEJtNVpmM1VscWRxOUkyTFpRPT0saT00MDk2</challenge>"
    ),
    .client(
      "<response xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>Yz1iaXdzLHI9ZnlrbytkMmxiYkZnT05Sdjlxa3hkYXdMRy9YZEFUeXlRREpVb3ZIazdJazV0Zz09LHA9bzQranBMMXZqbnZNejNFMG8zM0VjNUxjejIyVlRkUnIyQ1phRDVUbHd4VT0=</response>"
    ),
    .server(
      "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>dj02Tm54ckErb2pKeEtvVXdQMllGaTVrdzdtazF3OTU0YTVOQ3ZXZnpXVWFBPQ==</success>"
    ),
    .client(
      "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='localhost' version='1.0'/>"
    ),
    .server(
      "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' id='7154601650078155218' version='1.0' xml:lang='en' from='localhost'/>"
    ),
    .server(
      "<stream:features xmlns:stream='http://etherx.jabber.org/streams'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/><session xmlns='urn:ietf:params:xml:ns:xmpp-session'><optional/></session><sm xmlns='urn:xmpp:sm:2'/><sm xmlns='urn:xmpp:sm:3'/></stream:features>"
    ),
    .client(
      "<iq xmlns='jabber:client' type='set' id='bind-1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>chatlink-0123456789ab</resource></bind></iq>"
    ),
    .server(
      "<iq xmlns='jabber:client' type='result' id='bind-1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid>user@localhost/chatlink-0123456789ab</jid></bind></iq>"
    ),
    .client(
      "<enable xmlns='urn:xmpp:sm:3' resume='true'/>"
    ),
    .server(
      "<enabled resume='true' max='600' id='g2gCbQAAABVjaGF0bGluay0wMTIzNDU2Nzg5YWJtAAAACCAA54TMWGBk' xmlns='urn:xmpp:sm:3'/>"
    ),
    .client(
      "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>"
    ),
    .server(
      "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>"
    ),
  ]

  /// What ejabberd sent, in order (`XMLFrameParserTests` splits each at every byte).
  static var serverFrames: [String] {
    scramSHA256.compactMap { if case .server(let text) = $0 { text } else { nil } }
  }
}
