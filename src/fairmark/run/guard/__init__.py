"""What a live run holds and puts back however it ends: the host lock, its scratch directories (held by flock,
swept when a killed fairmark left them), SIGTERM/SIGHUP unwinding like Ctrl-C."""
