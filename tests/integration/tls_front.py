#!/usr/bin/env python3
"""A TLS front for chatload-sim, which speaks plain HTTP only: it listens on a loopback port
with a certificate, and splices each TLS connection to a fresh plain connection to the
simulator, one for one.  When the simulator closes its side (--close-after-answer) the TLS
connection is closed too, so the client sees the server close after every answer; when it
keeps the connection, so does the front.  Usage: tls_front.py PORT BACKEND_PORT CERT KEY.
Loopback only; a helper of the tests, no part of chatload."""
import select
import socket
import ssl
import sys
import threading


def splice(tls, back):
    try:
        tls.do_handshake()
        open_front = True
        while True:
            want = [back] + ([tls] if open_front else [])
            r, _, _ = select.select(want, [], [], 60) if not tls.pending() else (want, [], [])
            if not r:
                return
            if open_front and (tls in r or tls.pending()):
                data = tls.recv(65536)
                if data:
                    back.sendall(data)
                else:  # the client closed its side: pass it on, answer still flows back
                    open_front = False
                    back.shutdown(socket.SHUT_WR)
            if back in r:
                data = back.recv(65536)
                if not data:  # the simulator closed: so does the front
                    return
                tls.sendall(data)
    except (OSError, ssl.SSLError):
        return
    finally:
        for s in (tls, back):
            try:
                s.close()
            except OSError:
                pass


def main():
    port, backend, cert, key = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["http/1.1"])
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(128)
    print("listening", port, flush=True)
    while True:
        c, _ = ls.accept()
        try:
            b = socket.create_connection(("127.0.0.1", backend))
        except OSError:
            c.close()
            continue
        for s in (c, b):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        tls = ctx.wrap_socket(c, server_side=True, do_handshake_on_connect=False)
        threading.Thread(target=splice, args=(tls, b), daemon=True).start()


if __name__ == "__main__":
    main()
