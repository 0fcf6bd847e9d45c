// chatlinkctl: the command of chatlinkd. Everything but this line lives in ChatLinkCommands,
// where the tests can reach it.
import ChatLinkCommands

ChatLinkCtl.main()
