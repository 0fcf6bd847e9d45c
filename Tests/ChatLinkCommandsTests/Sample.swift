import JSON
import TestSupport

/// Sample daemon answers, as io.chatlink.Daemon documents them.
enum Sample {
  static let openStatus = json(
    """
    {"state":"open","text":"Connected to ws://127.0.0.1:8765/ (2 rooms) · 12 in, 3 out · outbox 0",\
    "url":"ws://127.0.0.1:8765/","rooms":["7","ops"],"subprotocol":null,\
    "extensions":"permessage-deflate","retry_in":null,"last_error":null,"store_error":null,\
    "received":12,"sent":3,"confirmed":3,"connects":1,"outbox":0,"last_seq":42,\
    "durable_seq":42,"store_path":"/var/lib/chatlink/messages.jsonl","version":"0.1.0"}
    """)

  static let waitingStatus = json(
    """
    {"state":"waiting","text":"Reconnecting to ws://127.0.0.1:8765/ in 2.5 s · 12 in, 3 out · \
    outbox 1 · last error: connection refused","url":"ws://127.0.0.1:8765/","rooms":[],\
    "retry_in":2.5,"last_error":"connection refused","store_error":"No space left on device",\
    "received":12,"sent":3,"confirmed":3,"connects":4,"outbox":1,"last_seq":42,\
    "durable_seq":41,"store_path":"/var/lib/chatlink/messages.jsonl","version":"0.1.0"}
    """)

  static let incoming = json(
    """
    {"seq":42,"time":"2026-12-02T12:00:00.123456Z","dir":"in","room":7,"type":"json",\
    "data":{"event":"message","data":{"room_id":7,"message":"hi","sender":"bob"}}}
    """)

  static let text = json(
    """
    {"seq":43,"time":"2026-12-02T12:00:00.200000Z","dir":"in","room":null,"type":"text",\
    "data":"a frame that is not JSON"}
    """)

  static let binary = json(
    """
    {"seq":44,"time":"2026-12-02T12:00:00.300000Z","dir":"in","room":null,"type":"binary",\
    "data":"AAEC/w=="}
    """)

  static let outgoing = json(
    """
    {"seq":1045,"time":"2026-12-02T12:00:01.000000Z","dir":"out","room":7,"type":"json",\
    "id":"5f1c9a2e0b7d4e31","data":{"event":"send-message","data":{"room_id":7,\
    "message":"deploy finished","sender":"ops-bot","count":12,"client_id":"5f1c9a2e0b7d4e31"}}}
    """)

  static let otherJSON = json(
    """
    {"seq":1046,"time":"2026-12-02T12:00:02.000000Z","dir":"in","room":"ops","type":"json",\
    "data":{"event":"user-joined","data":{"room_id":"ops","user":"carol"}}}
    """)

  static let receipt = json(#"{"id":"5f1c9a2e0b7d4e31","state":"queued","count":12}"#)
}
