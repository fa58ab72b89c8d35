// A separate process between the tests and RGW that stops answering on demand.
// argv: <target host> <target port>. stdin: one mode per line, acknowledged on stdout:
// - `pass`: forward every connection to the target;
// - `silent`: accept connections, read everything, never answer;
// - `stall`: answer each request's headers (200, a 4096-byte Content-Length), then send nothing more.
// A mode change cuts every open connection. stdout also reports each accepted and closed connection.
import { connect, createServer } from 'node:net'

const [host, port] = process.argv.slice(2)
let mode = 'pass'
const sockets = new Set()

const server = createServer((client) => {
  sockets.add(client)
  const connectionMode = mode
  process.stdout.write(`accepted ${connectionMode}\n`)
  client.on('error', () => {})
  client.on('close', () => {
    sockets.delete(client)
    process.stdout.write(`closed ${connectionMode}\n`)
  })
  if (connectionMode === 'pass') {
    const upstream = connect(Number(port), host)
    upstream.on('error', () => client.destroy())
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
    client.pipe(upstream)
    upstream.pipe(client)
    return
  }
  let head = ''
  let answered = false
  client.on('data', (chunk) => {
    if (connectionMode === 'silent' || answered) return
    head += chunk.toString('latin1')
    if (!head.includes('\r\n\r\n')) return
    answered = true
    client.write(
      'HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: 4096\r\n' +
        'ETag: "0123456789abcdef0123456789abcdef"\r\n\r\n<?xml version="1.0"',
    )
  })
})

let buffered = ''
process.stdin.setEncoding('utf8')
process.stdin.on('data', (chunk) => {
  buffered += chunk
  for (let newline = buffered.indexOf('\n'); newline >= 0; newline = buffered.indexOf('\n')) {
    mode = buffered.slice(0, newline).trim()
    buffered = buffered.slice(newline + 1)
    for (const socket of sockets) socket.destroy()
    process.stdout.write(`mode ${mode}\n`)
  }
})
// The test runner going away must not leave this process behind.
process.stdin.on('end', () => process.exit(0))

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${server.address().port}\n`)
})
