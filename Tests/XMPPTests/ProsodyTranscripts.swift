/// Frames captured from Prosody 0.12.3 (Debian) over RFC 7395 WebSocket, with a Python client
/// speaking the frames listed as `client` (on loopback, `consider_websocket_secure`; user
/// `user`, password `pencil`; the SCRAM client nonce `fyko+d2lbbFgONRv9qkxdawL`, its proof
/// computed with Python's hashlib: `Tests/Fixtures/prosody.py` captures the same way). Each
/// transcript is in order: `.client` what was sent, `.server` what came back. They check the
/// parser and the negotiation against a real server.
enum ProsodyTranscripts {
  enum Line: Equatable {
    case client(String)
    case server(String)
  }

  /// PLAIN, bind, stream management, a MUC join (status 110), a groupchat message and
  /// its reflection with stanza-id, `<r/>` both ways, an error for an unknown room, `<close/>`.
  static let plain: [Line] = [
    .client(
      "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='localhost' version='1.0'/>"
    ),
    .server(
      "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' version='1.0' from='localhost' xml:lang='en' id='ce3e1046-447c-4703-80ce-769bfb4949e4'/>"
    ),
    .server(
      "<stream:features xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>SCRAM-SHA-1</mechanism><mechanism>PLAIN</mechanism></mechanisms></stream:features>"
    ),
    .client(
      "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>AHVzZXIAcGVuY2ls</auth>"
    ),
    .server(
      "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>"
    ),
    .client(
      "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='localhost' version='1.0'/>"
    ),
    .server(
      "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' version='1.0' from='localhost' xml:lang='en' id='d8d9ba9c-0826-42f2-ad72-23aee0bbd6a5'/>"
    ),
    .server(
      "<stream:features xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'><sm xmlns='urn:xmpp:sm:2'><optional/></sm><sm xmlns='urn:xmpp:sm:3'><optional/></sm><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><required/></bind><session xmlns='urn:ietf:params:xml:ns:xmpp-session'><optional/></session><sub xmlns='urn:xmpp:features:pre-approval'/><c hash='sha-1' node='http://prosody.im' ver='RCsTrxK3Do+ACD6FaemxkXdEIlM=' xmlns='http://jabber.org/protocol/caps'/><ver xmlns='urn:xmpp:features:rosterver'/></stream:features>"
    ),
    .client(
      "<iq xmlns='jabber:client' type='set' id='bind-1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>chatlink-0123456789ab</resource></bind></iq>"
    ),
    .server(
      "<iq xmlns='jabber:client' id='bind-1' type='result'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid>user@localhost/chatlink-0123456789ab</jid></bind></iq>"
    ),
    .client(
      "<enable xmlns='urn:xmpp:sm:3' resume='true'/>"
    ),
    .server(
      "<enabled xmlns='urn:xmpp:sm:3' max='600' id='cvKcPm3stSFO' resume='true'/>"
    ),
    .client(
      "<presence xmlns='jabber:client' to='lobby@conference.localhost/chatlink' id='join-1'><x xmlns='http://jabber.org/protocol/muc'><history maxstanzas='0'/></x></presence>"
    ),
    .server(
      "<presence from='lobby@conference.localhost/chatlink' xmlns='jabber:client' id='join-1' xml:lang='en' to='user@localhost/chatlink-0123456789ab'><occupant-id xmlns='urn:xmpp:occupant-id:0' id='7nqseSPpKxgQ5Yu368U0eYQEtrKDmBqN8/XsTrl1Df4='/><x xmlns='http://jabber.org/protocol/muc#user'><status code='201'/><item role='moderator' jid='user@localhost/chatlink-0123456789ab' affiliation='owner'/><status code='110'/></x></presence>"
    ),
    .client(
      "<message xmlns='jabber:client' to='lobby@conference.localhost' type='groupchat' id='m-1'><body>héllo &amp; &lt;welcome&gt; 👋</body><origin-id xmlns='urn:xmpp:sid:0' id='m-1'/></message>"
    ),
    .server(
      "<message xmlns='jabber:client' type='groupchat' from='lobby@conference.localhost' to='user@localhost/chatlink-0123456789ab'><subject/></message>"
    ),
    .server(
      "<r xmlns='urn:xmpp:sm:3'/>"
    ),
    .server(
      "<message from='lobby@conference.localhost/chatlink' type='groupchat' xmlns='jabber:client' id='m-1' xml:lang='en' to='user@localhost/chatlink-0123456789ab'><body>héllo &amp; &lt;welcome&gt; 👋</body><origin-id id='m-1' xmlns='urn:xmpp:sid:0'/><occupant-id xmlns='urn:xmpp:occupant-id:0' id='7nqseSPpKxgQ5Yu368U0eYQEtrKDmBqN8/XsTrl1Df4='/><stanza-id by='lobby@conference.localhost' xmlns='urn:xmpp:sid:0' id='BAOTSyQMpYRATLro7L-dRQA4'/></message>"
    ),
    .client(
      "<r xmlns='urn:xmpp:sm:3'/>"
    ),
    .server(
      "<a xmlns='urn:xmpp:sm:3' h='2'/>"
    ),
    .client(
      "<message xmlns='jabber:client' to='nosuchroom@conference.localhost' type='groupchat' id='m-2'><body>x</body></message>"
    ),
    .server(
      "<message from='nosuchroom@conference.localhost' type='error' xmlns='jabber:client' id='m-2' to='user@localhost/chatlink-0123456789ab'><error type='cancel' by='conference.localhost'><item-not-found xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></message>"
    ),
    .client(
      "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>"
    ),
    .server(
      "<a xmlns='urn:xmpp:sm:3' h='3'/>"
    ),
    .server(
      "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>"
    ),
  ]

  /// SCRAM-SHA-1 (Prosody's salt and 10,000 iterations), bind, stream management.
  static let scram: [Line] = [
    .client(
      "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='localhost' version='1.0'/>"
    ),
    .server(
      "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' version='1.0' from='localhost' xml:lang='en' id='3de34282-5ca6-4d25-a376-800d57349ca8'/>"
    ),
    .server(
      "<stream:features xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>SCRAM-SHA-1</mechanism><mechanism>PLAIN</mechanism></mechanisms></stream:features>"
    ),
    .client(
      "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='SCRAM-SHA-1'>biwsbj11c2VyLHI9ZnlrbytkMmxiYkZnT05Sdjlxa3hkYXdM</auth>"
    ),
    .server(
      "<challenge xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>cj1meWtvK2QybGJiRmdPTlJ2OXFreGRhd0xhNzUyOTQ3Ny1mMzdhLTQ4ODUtOTc2YS05OTlhMDYxN2RjY2Qscz1NekV4TmpBeU5URXRaR0kxTVMwMFpXSTVMV0kyT1RBdE9EWTROVGhoTTJObFptTmwsaT0xMDAwMA==</challenge>"
    ),
    .client(
      "<response xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>Yz1iaXdzLHI9ZnlrbytkMmxiYkZnT05Sdjlxa3hkYXdMYTc1Mjk0NzctZjM3YS00ODg1LTk3NmEtOTk5YTA2MTdkY2NkLHA9YWN3TTREUWRUNTNEbk8zNWhmR1hnakNOaFRVPQ==</response>"
    ),
    .server(
      "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>dj1BbWt1bmZ4cHUvMS9na0lHeWVPR3dSQTZabWs9</success>"
    ),
    .client(
      "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='localhost' version='1.0'/>"
    ),
    .server(
      "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' version='1.0' from='localhost' xml:lang='en' id='dacc6345-59d7-423b-8121-f11f3447fbcc'/>"
    ),
    .server(
      "<stream:features xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'><sm xmlns='urn:xmpp:sm:2'><optional/></sm><sm xmlns='urn:xmpp:sm:3'><optional/></sm><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><required/></bind><session xmlns='urn:ietf:params:xml:ns:xmpp-session'><optional/></session><sub xmlns='urn:xmpp:features:pre-approval'/><c hash='sha-1' node='http://prosody.im' ver='RCsTrxK3Do+ACD6FaemxkXdEIlM=' xmlns='http://jabber.org/protocol/caps'/><ver xmlns='urn:xmpp:features:rosterver'/></stream:features>"
    ),
    .client(
      "<iq xmlns='jabber:client' type='set' id='bind-1'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><resource>chatlink-0123456789ab</resource></bind></iq>"
    ),
    .server(
      "<iq xmlns='jabber:client' id='bind-1' type='result'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid>user@localhost/chatlink-0123456789ab</jid></bind></iq>"
    ),
    .client(
      "<enable xmlns='urn:xmpp:sm:3' resume='true'/>"
    ),
    .server(
      "<enabled xmlns='urn:xmpp:sm:3' max='600' id='cq5TVSgzzDEC' resume='true'/>"
    ),
    .client(
      "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>"
    ),
    .server(
      "<a xmlns='urn:xmpp:sm:3' h='0'/>"
    ),
    .server(
      "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>"
    ),
  ]

  /// PLAIN with a wrong password: Prosody's `<failure/>`.
  static let wrongPassword: [Line] = [
    .client(
      "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='localhost' version='1.0'/>"
    ),
    .server(
      "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' version='1.0' from='localhost' xml:lang='en' id='45331aca-8207-42e9-b97d-11e160d10842'/>"
    ),
    .server(
      "<stream:features xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>SCRAM-SHA-1</mechanism><mechanism>PLAIN</mechanism></mechanisms></stream:features>"
    ),
    .client(
      "<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>AHVzZXIAd3Jvbmc=</auth>"
    ),
    .server(
      "<failure xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><not-authorized/><text>Unable to authorize you with the authentication credentials you&apos;ve sent.</text></failure>"
    ),
  ]

  /// Every frame the server sent, in all transcripts.
  static var serverFrames: [String] {
    (plain + scram + wrongPassword).compactMap {
      if case .server(let text) = $0 { text } else { nil }
    }
  }
}
