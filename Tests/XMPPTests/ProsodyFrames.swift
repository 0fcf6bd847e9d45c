/// Frames in the shapes Prosody 0.12 sends over WebSocket, with the tests' own ids and names
/// and what a live join leaves out (a delay); `ProsodyTranscripts` holds frames captured from
/// it. Tests/Fuzz/make_seed_corpus.py seeds the xmpp fuzzer with both.
enum ProsodyFrames {
  static let open =
    "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' version='1.0' from='localhost' "
    + "id='3b0f0c9e-6c1d-4c63-9f7e-1c4f5b2a7d10' xml:lang='en'/>"

  static let features =
    "<stream:features xmlns:stream='http://etherx.jabber.org/streams' xmlns='jabber:client'>"
    + "<mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>SCRAM-SHA-1</mechanism>"
    + "<mechanism>PLAIN</mechanism></mechanisms></stream:features>"

  static let boundFeatures =
    "<stream:features xmlns:stream='http://etherx.jabber.org/streams' xmlns='jabber:client'>"
    + "<bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><required/></bind>"
    + "<session xmlns='urn:ietf:params:xml:ns:xmpp-session'><optional/></session>"
    + "<sm xmlns='urn:xmpp:sm:2'><optional/></sm><sm xmlns='urn:xmpp:sm:3'><optional/></sm>"
    + "<csi xmlns='urn:xmpp:csi:0'/></stream:features>"

  static let challenge =
    "<challenge xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>"
    + "cj1meWtvK2QybGJiRmdPTlJ2OXFreGRhd0wzcmZjTkhZSlkxWlZ2V1ZzN2oscz1RU1hDUitRNnNlazhiZjkyLGk9NDA5Ng=="
    + "</challenge>"

  static let presence110 =
    "<presence xmlns='jabber:client' from='lobby@conference.localhost/chatlink' "
    + "to='bot@localhost/chatlink-0123456789ab' id='join-1'>"
    + "<x xmlns='http://jabber.org/protocol/muc#user'><status code='100'/>"
    + "<item affiliation='none' jid='bot@localhost/chatlink-0123456789ab' role='participant'/>"
    + "<status code='110'/></x></presence>"

  static let groupchat =
    "<message xmlns='jabber:client' from='lobby@conference.localhost/alice' "
    + "to='bot@localhost/chatlink-0123456789ab' type='groupchat' id='m-42' xml:lang='en'>"
    + "<body>héllo &amp; &lt;welcome&gt; 👋</body>"
    + "<stanza-id xmlns='urn:xmpp:sid:0' id='9f4e1c2a-0001' by='lobby@conference.localhost'/>"
    + "<delay xmlns='urn:xmpp:delay' from='lobby@conference.localhost' "
    + "stamp='2026-12-06T17:00:00Z'/></message>"

  static let request = "<r xmlns='urn:xmpp:sm:3'/>"
  static let answer = "<a xmlns='urn:xmpp:sm:3' h='42'/>"

  static let error =
    "<message xmlns='jabber:client' from='lobby@conference.localhost' type='error' id='s-7'>"
    + "<error type='cancel' by='lobby@conference.localhost'>"
    + "<not-acceptable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/>"
    + "<text xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'>You are not in the room</text>"
    + "</error></message>"

  static let streamError =
    "<stream:error xmlns:stream='http://etherx.jabber.org/streams'>"
    + "<not-well-formed xmlns='urn:ietf:params:xml:ns:xmpp-streams'/></stream:error>"

  static let all = [
    open, features, boundFeatures, challenge, presence110, groupchat, request, answer, error,
    streamError,
  ]
}
