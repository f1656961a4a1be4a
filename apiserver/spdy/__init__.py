"""SPDY/3.1 for old kubectl's exec and attach: framing (``framing``), a server session (``session``), the uvicorn
hook that lets the app take over an ``Upgrade: SPDY/3.1`` connection (``upgrade``) and the bridge of client-go's
remotecommand streams to the kubelet's exec/attach websocket (``remotecommand``)."""
