// chatlink-autobahn: the Autobahn|Testsuite client agent, on the daemon's own engine and loop.
import EventLoop
@preconcurrency import Glibc

let options: AgentOptions
do {
  options = try AgentOptions.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
  fputs("chatlink-autobahn: \(error)\n\n\(AgentOptions.usage)", stderr)
  exit(2)
}
if options.showHelp {
  print(AgentOptions.usage)
  exit(0)
}

do {
  let loop = try EventLoop()
  let agent = try AutobahnAgent(loop: loop, options: options)
  agent.start()
  exit(try loop.run())
} catch {
  fputs("chatlink-autobahn: \(error)\n", stderr)
  exit(1)
}
