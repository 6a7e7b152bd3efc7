"""Test hosts: Linux network namespaces on a private bridge, each running its own real OpenSSH sshd.

    with NetHosts(["h1", "h2"]) as net:
        net.ssh_config            # a per-test ssh_config: `ssh -F net.ssh_config h1` reaches namespace h1
        net.hosts["h1"].address   # its address on the test network (a random private 10.x.y.0/24)
        net.host_table()          # {"h1": {"ssh": "h1", "ssh_options": ["-F", …]}, …} for a plan's [hosts]

`NetHosts([...], login="fmlab")` is a lab that forbids root logins: sshd (PermitRootLogin no) lets in only the
user LOGIN, who may run anything as root with `sudo -n`. The user exists only in the sshd's private mount
namespace (copies of /etc/passwd, group, shadow and sudoers bound over the originals there, as for dropbear): the
machine's accounts and sudoers are not touched.

`NetHosts([...], server="dropbear")` runs dropbear instead (a small SSH server: no SetEnv, no AuthorizedKeysFile,
and no command longer than 9000 bytes). Dropbear reads root's authorized_keys from root's home only, so each
dropbear runs in its own mount namespace where /etc/passwd is a copy naming a directory of the test as root's
home: the machine's /root is neither read nor written, and nothing is hidden from the agent's trials.

Every host gets a fresh ed25519 host key; the client key and known_hosts are made for the test. Nothing here
touches the machine's own sshd, ~/.ssh or routes: traffic flows only between the namespaces and the bridge
end in the root namespace. Teardown (also when a test fails) kills every process left in each namespace,
deletes the namespaces (their veth ends go with them), the bridge, and the key directory.

The namespaces share the file system and the process table with the test: an agent started over SSH can
be the same fairmark the test imports. Each sshd exports FAIRMARK_AGENT_STATE so that every "host" keeps
its own agent journal, as separate machines would.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from helpers import REPO

SSHD = "/usr/sbin/sshd"
SERVERS = ("openssh", "dropbear")


def available(server: str = "openssh") -> str | None:
    """Why namespace hosts cannot be made here, or None when they can."""
    if os.geteuid() != 0:
        return "needs root (ip netns)"
    if server == "dropbear":
        for tool in ("dropbear", "dropbearkey", "unshare", "mount"):
            if not shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin"):
                return f"missing {tool} (packages/debian-test.txt: dropbear-bin, util-linux)"
    for exe in (SSHD, shutil.which("ssh"), shutil.which("ip"), shutil.which("ssh-keygen")):
        if not exe or not os.path.exists(exe):
            return (
                f"missing {exe or 'ssh/ip/ssh-keygen'} (packages/debian-test.txt: openssh-server, iproute2)"
            )
    return None


def _sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if check and res.returncode != 0:  # what `ip` said, not only its exit status
        raise RuntimeError(f"{' '.join(argv)}: exit {res.returncode}: {res.stderr.strip()[-500:]}")
    return res


_TAGS: set[str] = set()  # the tags this process has used


def _free_tag() -> str:
    """Six digits that no bridge, veth or namespace on the machine carries, nor an earlier NetHosts of this
    process: a tag made of the PID and two random digits once named an earlier instance's bridge (1 chance in
    100 a pair), and the failed instance's teardown deleted it under that instance's running hosts."""
    taken = _sh("ip", "-o", "link").stdout + _sh("ip", "netns", "list").stdout
    for _ in range(1000):
        tag = f"{random.randint(0, 999999):06d}"
        if (
            tag not in _TAGS
            and f"fmbr{tag}" not in taken
            and f"fm{tag}" not in taken
            and f"fmv{tag}" not in taken
        ):
            _TAGS.add(tag)
            return tag
    raise RuntimeError("no free tag for test hosts")


def _free_subnet() -> str:
    """A 10.x.y.0/24 that no interface here uses (the test chooses its own private range)."""
    used = _sh("ip", "-o", "-4", "addr", "show").stdout
    for _ in range(100):
        net = f"10.{random.randint(100, 250)}.{random.randint(0, 255)}"
        if f" {net}." not in used:
            return net
    raise RuntimeError("no free 10.x.y.0/24 found")


@dataclass
class NetHost:
    name: str
    netns: str
    address: str
    state_dir: Path
    sshd: subprocess.Popen[bytes] | None = None

    def exec(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a command inside this host's namespace (for the test's own checks)."""
        return _sh("ip", "netns", "exec", self.netns, *argv, check=check)

    def processes(self) -> list[str]:
        """Command lines of the processes in this host's network namespace (the PID space is shared: `ps`
        inside the namespace would list every process of the machine)."""
        out = []
        for pid in _sh("ip", "netns", "pids", self.netns, check=False).stdout.split():
            try:
                out.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip())
            except OSError:
                pass
        return out

    def count(self, prefix: str) -> int:
        return sum(cmd.startswith(prefix) for cmd in self.processes())

    def sshd_children(self) -> list[int]:
        """PIDs of the per-connection sshd processes (children of the listening sshd)."""
        if self.sshd is None:
            return []
        out = _sh("ps", "-o", "pid=", "--ppid", str(self.sshd.pid), check=False).stdout
        return [int(p) for p in out.split()]


class NetHosts:
    def __init__(
        self, names: list[str], *, tag: str | None = None, server: str = "openssh", login: str | None = None
    ):
        assert server in SERVERS, server
        assert login is None or server == "openssh", "a login user: OpenSSH hosts only"
        self.names = names
        self.login = login
        self.server = server
        self.tag = tag or _free_tag()
        self.dir = Path(tempfile.mkdtemp(prefix="fairmark-nethosts-"))
        self.bridge = f"fmbr{self.tag}"[:15]
        self.subnet = ""
        self.hosts: dict[str, NetHost] = {}
        self.ssh_config = self.dir / "ssh_config"
        self.made_bridge = False  # the teardown deletes only what this object made

    # -- setup -------------------------------------------------------------------------------------------
    def __enter__(self) -> NetHosts:
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _setup(self) -> None:
        os.chmod(self.dir, 0o755)
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege-separation directory
        self.subnet = _free_subnet()
        _sh("ip", "link", "add", self.bridge, "type", "bridge")
        self.made_bridge = True
        _sh("ip", "addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
        _sh("ip", "link", "set", self.bridge, "up")
        _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fairmark-test", "-f", str(self.dir / "id"))
        (self.dir / "authorized_keys").write_text((self.dir / "id.pub").read_text())
        for i, name in enumerate(self.names):
            self.hosts[name] = self._host(i, name)
        self._write_client_config()
        for host in self.hosts.values():
            self._start_sshd(host)
        for host in self.hosts.values():
            self._wait_ssh(host)

    def _host(self, i: int, name: str) -> NetHost:
        netns, veth = f"fm{self.tag}{name}"[:30], f"fmv{self.tag}{i}"[:15]
        host = NetHost(name, netns, f"{self.subnet}.{11 + i}", self.dir / f"{name}-agent-state")
        host.state_dir.mkdir()
        if self.login:  # the agent's state is the login user's, as in its home on a real host
            os.chown(host.state_dir, 64123, 64123)
        _sh("ip", "netns", "add", netns)
        _sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns)
        _sh("ip", "link", "set", veth, "master", self.bridge)
        _sh("ip", "link", "set", veth, "up")
        _sh("ip", "-n", netns, "addr", "add", f"{host.address}/24", "dev", "eth0")
        _sh("ip", "-n", netns, "link", "set", "eth0", "up")
        _sh("ip", "-n", netns, "link", "set", "lo", "up")
        if self.server == "dropbear":
            self._dropbear_files(host)
        else:
            self._sshd_files(host)
        return host

    def _sshd_files(self, host: NetHost) -> None:
        name = host.name
        key = self.dir / f"{name}-hostkey"
        _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key))
        (self.dir / f"{name}-sshd_config").write_text(
            f"ListenAddress {host.address}:22\n"
            f"HostKey {key}\n"
            f"PidFile {self.dir / f'{name}-sshd.pid'}\n"
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}\n"
            f"PermitRootLogin {'no' if self.login else 'prohibit-password'}\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "UsePAM no\nStrictModes no\nMaxSessions 50\nMaxStartups 50\n"
            # An SSH session starts with an environment of its own: a fairmark agent run from this checkout
            # would write __pycache__ into src/ (see conftest.py).
            f"SetEnv FAIRMARK_AGENT_STATE={host.state_dir} PYTHONPYCACHEPREFIX={REPO / '.pycache'}\n"
            "Subsystem sftp internal-sftp\n"
        )

    def _dropbear_files(self, host: NetHost) -> None:
        """dropbearkey's host key (its public half, OpenSSH's format, for known_hosts), root's home for this
        host with .ssh/authorized_keys (dropbear insists on owner-only modes), and the /etc/passwd that names it."""
        name = host.name
        key = self.dir / f"{name}-hostkey"
        out = _sh("dropbearkey", "-t", "ed25519", "-f", str(key)).stdout
        pub = next(line for line in out.splitlines() if line.startswith("ssh-ed25519 "))
        (self.dir / f"{name}-hostkey.pub").write_text(pub + "\n")
        home = self.dir / f"{name}-root-home"
        (home / ".ssh").mkdir(parents=True)
        (home / ".ssh" / "authorized_keys").write_text((self.dir / "id.pub").read_text())
        for path, mode in ((home, 0o700), (home / ".ssh", 0o700), (home / ".ssh" / "authorized_keys", 0o600)):
            path.chmod(mode)
        lines = Path("/etc/passwd").read_text().splitlines()
        fields = [line.split(":") for line in lines]
        rows = [":".join([*f[:5], str(home), *f[6:]]) if f[0] == "root" else ":".join(f) for f in fields]
        (self.dir / f"{name}-passwd").write_text("\n".join(rows) + "\n")

    def _write_client_config(self) -> None:
        known = []
        lines = []
        for name, h in self.hosts.items():
            pub = (self.dir / f"{name}-hostkey.pub").read_text().split()
            known.append(f"{h.address} {pub[0]} {pub[1]}\n")
            lines.append(
                f"Host {name}\n  HostName {h.address}\n  User {self.login or 'root'}\n  IdentityFile {self.dir / 'id'}\n"
                f"  IdentitiesOnly yes\n  UserKnownHostsFile {self.dir / 'known_hosts'}\n"
                "  StrictHostKeyChecking yes\n  BatchMode yes\n  ConnectTimeout 10\n"
            )
        (self.dir / "known_hosts").write_text("".join(known))
        self.ssh_config.write_text("".join(lines))

    def _start_sshd(self, host: NetHost) -> None:
        log = open(self.dir / f"{host.name}-sshd.log", "wb")  # noqa: SIM115 - lives as long as the server
        if self.server == "dropbear":
            argv = self._dropbear_argv(host)
            env = {**os.environ, "FAIRMARK_AGENT_STATE": str(host.state_dir)}  # -e: passed to the sessions
        else:
            argv = [SSHD, "-D", "-e", "-f", str(self.dir / f"{host.name}-sshd_config")]
            env = None
            if self.login:
                argv = self._with_login(argv)
        host.sshd = subprocess.Popen(
            ["ip", "netns", "exec", host.netns, *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=env,
        )

    def _dropbear_argv(self, host: NetHost) -> list[str]:
        """dropbear in a private mount namespace whose /etc/passwd gives root this host's home (every process
        in between execs: the Popen's pid is dropbear's)."""
        passwd = self.dir / f"{host.name}-passwd"
        dropbear = [
            *("dropbear", "-F", "-E", "-e", "-s", "-m"),
            *("-r", str(self.dir / f"{host.name}-hostkey"), "-p", f"{host.address}:22"),
            *("-P", str(self.dir / f"{host.name}-sshd.pid")),
        ]
        script = 'mount --bind "$1" /etc/passwd && shift && exec "$@"'
        return [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
            str(passwd),
            *dropbear,
        ]

    def _with_login(self, sshd: list[str]) -> list[str]:
        """sshd in a private mount namespace where the user self.login exists (uid 64 123, a home in the test's
        directory) and may `sudo -n` anything, keeping the variables the test's sshd sets for the agent."""
        if not (self.dir / "etc-sudoers").exists():
            self._login_files()
        binds = ("passwd", "group", "shadow", "sudoers")
        script = "".join(f'mount --bind "$1" /etc/{b} && shift && ' for b in binds) + 'exec "$@"'
        files = [str(self.dir / f"etc-{b}") for b in binds]
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *files, *sshd]

    def _login_files(self) -> None:
        user, uid = self.login, 64123
        home = self.dir / f"{user}-home"
        home.mkdir()
        os.chown(home, uid, uid)
        extra = {
            "passwd": f"{user}:x:{uid}:{uid}:fairmark test lab user:{home}:/bin/sh\n",
            "group": f"{user}:x:{uid}:\n",
            "shadow": f"{user}:*:19000:0:99999:7:::\n",
            "sudoers": (
                f"{user} ALL=(ALL) NOPASSWD: ALL\n"
                f'Defaults:{user} env_keep += "FAIRMARK_AGENT_STATE PYTHONPYCACHEPREFIX"\n'
            ),
        }
        for name, line in extra.items():
            path = self.dir / f"etc-{name}"
            path.write_text(Path(f"/etc/{name}").read_text() + line)
            path.chmod({"shadow": 0o640, "sudoers": 0o440}.get(name, 0o644))

    def stop_sshd(self, name: str) -> None:
        """The host's sshd and every session it serves die (the host becomes unreachable)."""
        host = self.hosts[name]
        children = host.sshd_children()
        if host.sshd:
            host.sshd.kill()
            host.sshd.wait()
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def start_sshd(self, name: str) -> None:
        self._start_sshd(self.hosts[name])
        self._wait_ssh(self.hosts[name])

    def _wait_ssh(self, host: NetHost) -> None:
        deadline = time.monotonic() + 20
        while True:
            res = _sh(*self.ssh(host.name), "true", check=False)
            if res.returncode == 0:
                return
            if time.monotonic() > deadline or (host.sshd and host.sshd.poll() is not None):
                log = (self.dir / f"{host.name}-sshd.log").read_text(errors="replace")
                raise RuntimeError(
                    f"sshd in {host.netns} did not answer: {res.stderr.strip()} / {log[-2000:]}"
                )
            time.sleep(0.1)

    # -- use -----------------------------------------------------------------------------------------------
    def ssh(self, name: str) -> list[str]:
        return ["ssh", "-F", str(self.ssh_config), name]

    def host_table(self) -> dict[str, dict[str, object]]:
        return {n: {"ssh": n, "ssh_options": ["-F", str(self.ssh_config)]} for n in self.hosts}

    def hosts_toml(self, agent: list[str] | None = None) -> str:
        """The plan's [hosts.NAME] tables for these hosts (optionally with the agent command to start)."""
        out = []
        for n in self.hosts:
            out.append(f'[hosts.{n}]\nssh = "{n}"\nssh_options = ["-F", "{self.ssh_config}"]\n')
            if agent:
                out.append("agent = [" + ", ".join(f'"{a}"' for a in agent) + "]\n")
        return "".join(out)

    # -- teardown ------------------------------------------------------------------------------------------
    def close(self) -> None:
        for host in self.hosts.values():
            self._kill_namespace(host)
        for i, host in enumerate(self.hosts.values()):
            # Deleting the root end removes the pair at once (a namespace's own cleanup is deferred).
            _sh("ip", "link", "del", f"fmv{self.tag}{i}"[:15], check=False)
            _sh("ip", "netns", "del", host.netns, check=False)
        if self.made_bridge:
            _sh("ip", "link", "del", self.bridge, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    def _kill_namespace(self, host: NetHost) -> None:
        if host.sshd and host.sshd.poll() is None:
            host.sshd.terminate()
            try:
                host.sshd.wait(5)
            except subprocess.TimeoutExpired:
                host.sshd.kill()
                host.sshd.wait()
        for _ in range(3):  # session sshds, agents and their trials: everything still in the namespace
            pids = [int(p) for p in _sh("ip", "netns", "pids", host.netns, check=False).stdout.split()]
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)

    def leftovers(self) -> list[str]:
        """What of this object still exists on the machine (for the teardown test)."""
        names = _sh("ip", "netns", "list").stdout
        links = _sh("ip", "-o", "link").stdout
        left = [h.netns for h in self.hosts.values() if h.netns in names]
        left += [self.bridge] if f" {self.bridge}:" in links or f" {self.bridge}@" in links else []
        left += [f"fmv{self.tag}{i}" for i in range(len(self.names)) if f"fmv{self.tag}{i}@" in links]
        left += [str(self.dir)] if self.dir.exists() else []
        return left
