# verl-score's Python fork server (see forkserver.go). The interpreter is
# started exactly as a contained run starts it, `python3 /sandbox/solution.py`
# with the run's environment, in the run's view, and its user site's
# usercustomize (forkServerStart in forkserver.go) runs this file: the last
# thing a plain start does before it runs the main file. Here the server
# unmounts its own space and waits for runs. For each it spawns the run's
# PID 1 in a new PID namespace and forks the program, which takes the run's
# other namespaces and mounts its own space in the view. The program takes
# the run's limits, user, directory and pipes, puts back what a plain start
# has (modules, sys.path, import caches), and then fails the usercustomize
# import the way a missing one fails, so the interpreter goes on as it
# would have: it opens /sandbox/solution.py, now the run's file, and runs it
# as __main__ with nothing of ours on the stack. Its exit is the
# interpreter's, or where nothing can tell, fast_exit's.


def _server():
    import os
    import sys

    def statm_vsize():
        fd = os.open("/proc/self/statm", os.O_RDONLY)
        try:
            return int(os.read(fd, 64).split()[0]) * os.sysconf("SC_PAGE_SIZE")
        finally:
            os.close(fd)

    plain_modules = set(sys.modules)
    # What a plain start has mapped: usercustomize.py measured it before
    # it compiled this file, whose compilation grows the heap.
    plain_vsize = _verl_plain_vsize
    user_site = os.path.dirname(os.path.abspath(__file__))
    allowed_cpus = os.sched_getaffinity(0)
    with open(os.path.join(user_site, "verl_score_cpu"), "rb") as f:
        own_cpu = {sorted(allowed_cpus)[int(f.read()) % len(allowed_cpus)]}
    # The seccomp filter each program installs (empty: none).
    with open(os.path.join(user_site, "verl_score_seccomp"), "rb") as f:
        seccomp_filter = f.read()

    # A prelude server first runs the import statements every one of its
    # programs begins with (the fn_name driver's), in a namespace of their
    # own, before anything else is imported: its programs find the same
    # modules, imported in the same order, that their first lines would
    # import, and run those lines in a fraction of the time. What the
    # imports mapped is what a plain start maps running them.
    prelude_vsize = 0
    # Whether anything registers fork hooks that run in the parent (the
    # server's forks skip the interpreter's own steps around them where
    # nothing does; see fork_for_init).
    parent_hooks = []
    register_at_fork = os.register_at_fork

    def noting_register_at_fork(**hooks):
        if hooks.get("before") is not None or hooks.get("after_in_parent") is not None:
            parent_hooks.append(True)
        return register_at_fork(**hooks)

    os.register_at_fork = noting_register_at_fork
    prelude_path = os.path.join(user_site, "verl_score_prelude.py")
    if sys.version_info >= (3, 11) and os.path.exists(prelude_path):  # needs the audit hook below
        before = statm_vsize()
        with open(prelude_path, "rb") as f:
            exec(compile(f.read(), prelude_path, "exec"), {"__name__": "__verl_prelude__"})
        prelude_vsize = statm_vsize() - before
    os.register_at_fork = register_at_fork
    prelude_order = [name for name in sys.modules if name not in plain_modules]
    run_modules = set(sys.modules)  # what a run's program may find imported
    plain_importers = set(sys.path_importer_cache)

    import _io
    import _operator
    import _socket
    import _thread
    import _weakref
    import atexit
    import ctypes
    import gc
    import itertools
    import opcode
    import resource
    import time

    libc = ctypes.CDLL(None, use_errno=True)

    NEWNS, NEWUTS, NEWIPC, NEWPID, NEWNET = 0x20000, 0x4000000, 0x8000000, 0x20000000, 0x40000000
    MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
    MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE, MNT_DETACH = 0x20, 0x1000, 0x4000, 0x40000, 2
    PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
    PR_SET_SECCOMP, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 22, 24, 38, 47
    PR_CAP_AMBIENT_CLEAR_ALL, SECCOMP_MODE_FILTER, EINVAL = 4, 2, 22
    BIND_WRITABLE, BIND_DEVICE, BIND_FILE, BIND_IN_VIEW = 1, 2, 4, 8
    SIGKILL = 9
    MSG_CMSG_CLOEXEC = 0x40000000

    def check(rc, what):
        if rc != 0:
            e = ctypes.get_errno()
            raise OSError(e, what + ": " + os.strerror(e))

    def mount(src, dst, fstype, flags, data):
        check(libc.mount(src, dst, fstype, ctypes.c_ulong(flags), data), "mount " + os.fsdecode(dst))

    # --- nsinit's record format (scripts and reports) ---------------------
    def uvarint(b, i):
        v = shift = 0
        while True:
            c = b[i]
            i += 1
            v |= (c & 0x7F) << shift
            if c < 0x80:
                return v, i
            shift += 7

    def records(b):
        out, i = [], 0
        while i < len(b):
            op = b[i]
            n, i = uvarint(b, i + 1)
            args = []
            for _ in range(n):
                size, i = uvarint(b, i)
                args.append(b[i:i + size])
                i += size
            out.append((chr(op), args))
        return out

    def put_uvarint(out, v):
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)

    def record(op, *args):
        out = bytearray([ord(op)])
        put_uvarint(out, len(args))
        for a in args:
            if isinstance(a, int):
                a = str(a).encode()
            put_uvarint(out, len(a))
            out += a
        return bytes(out)

    def write_all(fd, b):
        while b:
            b = b[os.write(fd, b):]

    def read_all(fd, limit=1 << 40):
        chunks, size = [], 0
        while True:
            c = os.read(fd, 1 << 16)
            if not c:
                return b"".join(chunks)
            chunks.append(c)
            size += len(c)
            if size > limit:
                raise OSError(27, "file too large")

    # --- the run's own space, as nsinit builds it --------------------------
    def mkdir_all(p, mode, uid, gid):
        if os.path.isdir(p):
            return
        parent = os.path.dirname(p)
        if parent not in (p, b"/"):
            mkdir_all(parent, 0o755, -1, -1)
        try:
            os.mkdir(p, mode)
        except FileExistsError:
            pass
        os.chmod(p, mode)
        if uid >= 0:
            os.lchown(p, uid, gid)

    def write_file(p, mode, uid, gid, data):
        mkdir_all(os.path.dirname(p), 0o755, uid, gid)
        fd = os.open(p, os.O_CREAT | os.O_TRUNC | os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW, mode)
        try:
            write_all(fd, data)
            os.fchmod(fd, mode)
            if uid >= 0:
                os.fchown(fd, uid, gid)
        finally:
            os.close(fd)

    def bind(src, dst, flags):
        mount(src, dst, None, MS_BIND, None)
        # Binds of the run's space: its tmpfs is nosuid and nodev.
        mf = MS_NOSUID | MS_NODEV
        mf |= MS_NOEXEC if flags & BIND_DEVICE else MS_NODEV
        if not flags & BIND_WRITABLE:
            mf |= MS_RDONLY
        mount(b"", dst, None, MS_BIND | MS_REMOUNT | mf, None)

    def detach_space(ops):
        """Unmounts the mounts of a run's space (the server's own, once),
        last first: a run's view is then the server's with the run's own
        space mounted, in the order a plain start's init mounts it."""
        for op, a in reversed(ops):
            if op in "sp" or (op == "b" and int(a[2]) & BIND_IN_VIEW):
                check(libc.umount2(a[1] if op == "b" else a[0], MNT_DETACH), "unmount the server's " + os.fsdecode(a[0]))

    def build_space(ops):
        """Builds the run's space in the server's view, which has none of
        its own (detach_space); returns what the run needs."""
        run = {"proc": None, "limits": None}
        for op, a in ops:
            if op == "s":
                opts = b"size=" + a[1] + b"m,mode=0755" + (b",nr_inodes=" + a[2] if len(a) > 2 else b"")
                mount(b"tmpfs", a[0], b"tmpfs", MS_NOSUID | MS_NODEV, opts)
            elif op == "b":
                if not int(a[2]) & BIND_IN_VIEW:
                    raise OSError(22, "a fork-server run binds nothing of the host")
                bind(a[0], a[1], int(a[2]))
            elif op == "d":
                mode, uid = int(a[1]), int(a[2])
                os.mkdir(a[0], mode)  # in the new tmpfs: its parent is there
                os.chmod(a[0], mode)
                if uid >= 0:
                    os.lchown(a[0], uid, int(a[3]))
            elif op == "f":
                write_file(a[0], int(a[1]), int(a[2]), int(a[3]), a[4])
            elif op == "p":
                run["proc"] = a[0]
            elif op == "x":
                run["dir"], run["uid"], run["gid"] = a[0], int(a[1]), int(a[2])
                if a[3:] != [os.fsencode(x) for x in sys.orig_argv]:
                    raise OSError(22, "the run's command is not this server's")
            elif op == "e":
                pass  # the caller starts a server with the runs' environment
            elif op == "g":
                raise OSError(22, "a fork-server run fetches no files")
            elif op == "u":
                run["limits"] = [int(x) for x in a]
            else:
                raise OSError(22, "unknown operation " + op)
        if run["limits"] is None or "uid" not in run or run["uid"] < 0:
            raise OSError(22, "the script has no limits, program or user")
        return run

    RLIMITS = (resource.RLIMIT_CPU, resource.RLIMIT_FSIZE, resource.RLIMIT_NOFILE, resource.RLIMIT_AS,
               resource.RLIMIT_DATA, resource.RLIMIT_STACK, resource.RLIMIT_NPROC)

    def become_program(run, stdio, rep):
        """The run's program: this process, once it is what a plain start
        of it would be. Returns to the interpreter's start-up. The report
        rep closes last, once it has what the set-up cost (ReportSetup)."""
        for i, fd in enumerate(stdio):
            os.dup2(fd, i)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        for which, v in zip(RLIMITS, run["limits"]):
            if v > 0:
                if which == resource.RLIMIT_AS:
                    # What the server mapped and a plain start does not
                    # (its imports, the heap it grew) is this process's
                    # too: the limit allows for it, as it stands now.
                    v += max(0, statm_vsize() - plain_vsize - prelude_vsize)
                resource.setrlimit(which, (v, v))
        os.umask(0o022)
        os.setgroups([])
        os.setgid(run["gid"])
        os.setuid(run["uid"])
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        libc.prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)
        os.chdir(run["dir"])
        close_all_but([rep])
        # The start-up's objects stay frozen: the program's collections
        # and its exit then leave them (and their pages) alone. __main__
        # must be new, though: a frozen module dict outlives the module at
        # exit, and the __del__ of what the program left in it would not
        # run. The new one has the old one's names, in their order.
        old = sys.modules["__main__"]
        main = type(sys)("__main__")
        for k, v in old.__dict__.items():
            main.__dict__[k] = {} if k == "__annotations__" else v
        sys.modules["__main__"] = main
        # The prelude's random module was seeded in the server: each run
        # draws a seed of its own, as its own import would.
        if "random" in sys.modules and "random" not in plain_modules:
            sys.modules["random"].seed()
        if fast_exit_ok:
            watch_main(main)
        write_all(rep, record("C", time.process_time_ns(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt))
        os.close(rep)

    # --- the program's exit -----------------------------------------------
    # A forked program's exit is dear: the interpreter's finalization drops
    # every module of the start-up, and each object it touches sits on a
    # page shared with the server, which the kernel then copies. When
    # nothing the program left behind can act at exit, the end the
    # interpreter would reach is known: its standard streams flushed and
    # the exit status of the main module's outcome. fast_exit then ends the
    # program there. It is the last exit function (registered before any of
    # the program's), so the program's own atexit functions and its threads
    # have all run; it takes the fast way only when the main module's frame
    # ended in a return (status 0) or in an exception that the interpreter
    # has reported (status 1), and when no object that a finalization would
    # run code for is alive. Anything else, or anything it does not know,
    # leaves the exit to the interpreter.
    RETURNS = {opcode.opmap[n] for n in ("RETURN_VALUE", "RETURN_CONST") if n in opcode.opmap}
    HAVE_GC = 1 << 14
    type_mro = type.__dict__["__mro__"].__get__
    type_dict = type.__dict__["__dict__"].__get__
    type_flags = type.__dict__["__flags__"].__get__
    main_thread = _thread.get_ident()

    async def _coro():
        pass

    async def _agen():
        yield

    def _gen():
        yield

    # Types whose instances need a look of their own: a generator that is
    # suspended runs code when closed, a weak reference may have a callback.
    # In-memory files close without output.
    coro = _coro()
    GEN, CORO, AGEN = type(_gen()), type(coro), type(_agen())
    coro.close()  # never run: no warning about it on the server's stderr
    weak_refs = _weakref.ReferenceType
    weak_proxies = (_weakref.ProxyType, _weakref.CallableProxyType)
    weak_callback = weak_refs.__callback__.__get__
    exception_traceback = BaseException.__traceback__.__get__
    try:
        raise ValueError
    except ValueError as e:
        TRACEBACK = type(e.__traceback__)
    audit_hooks = []  # set once a program adds an audit hook
    pending_profile = [None]  # watch_main's profile function, until the main file runs

    # The callbacks by which the standard library's weak collections (and
    # the registries of abstract base classes) drop an entry whose
    # referent died: they run no code of the program's.
    QUIET_CALLBACKS = {("_weakrefset.py", "WeakSet.__init__.<locals>._remove"),
                       ("weakref.py", "WeakValueDictionary.__init__.<locals>.remove"),
                       ("weakref.py", "WeakKeyDictionary.__init__.<locals>.remove")}
    stdlib_dir = os.path.dirname(os.__file__)
    BUILTIN_METHOD = type(len)

    def quiet_callback(f):
        if type(f) is BUILTIN_METHOD:
            # _abc's: it drops a dead class from an ABC's registry, a set
            # it holds through the weak reference that is its self.
            return f.__name__ == "_destroy" and type(f.__self__) is weak_refs
        if type(f) is not type(quiet_callback):
            return False
        code = f.__code__
        where, name = os.path.split(code.co_filename)
        return where == stdlib_dir and (name, code.co_qualname) in QUIET_CALLBACKS

    def has_finalizer(t):
        return any("__del__" in type_dict(c) for c in type_mro(t))

    def finalizers_alive(ours):
        """Whether an object the program made would run code or write when
        the interpreter finalizes it. ours is an object made just before
        the program started. Nothing here calls the program's code: types
        are told apart by identity (a metaclass may define __hash__) and
        attributes are read through the built-in types' descriptors."""
        objs = gc.get_objects()
        if not any(map(_operator.is_, objs, itertools.repeat(ours))):
            return True  # the program froze what it made (gc.freeze), out of sight
        types = list(map(type, objs))
        looks = set()
        for t in dict(zip(map(id, types), types)).values():
            if t is _io.BytesIO or t is _io.StringIO:
                continue  # in-memory files close without output
            if t is GEN or t is CORO or t is AGEN or issubclass(t, weak_refs) or issubclass(t, type):
                looks.add(id(t))
            elif issubclass(t, weak_proxies) or has_finalizer(t):
                return True
        if not looks:
            return False
        for o in itertools.compress(objs, map(looks.__contains__, map(id, types))):
            t = type(o)
            if t is GEN:
                if GEN.gi_suspended.__get__(o):
                    return True  # closing it runs its finally blocks
            elif t is CORO:
                if CORO.cr_frame.__get__(o) is not None:
                    return True
            elif t is AGEN:
                if AGEN.ag_frame.__get__(o) is not None:
                    return True
            elif issubclass(t, type):
                # A class whose instances the collector does not track:
                # they are not in objs, so the class answers for them.
                if not type_flags(o) & HAVE_GC and has_finalizer(o):
                    return True
            else:
                callback = weak_callback(o)
                if callback is not None and not quiet_callback(callback):
                    return True
        return False

    def exit_status(frame):
        """The status the interpreter will exit with, from how the main
        module ended; None where that is not known here."""
        code = frame.f_code.co_code
        at = frame.f_lasti
        if 0 <= at < len(code) and code[at] in RETURNS:
            return 0
        # An exception the interpreter reported: it stored it in sys.last_*
        # and went on to the end of the file's run, which deletes __file__
        # (a SystemExit ends the process before that, and its status is
        # not known here).
        value, tb = getattr(sys, "last_value", None), getattr(sys, "last_traceback", None)
        t = type(value)
        if (issubclass(t, BaseException) and not issubclass(t, (SystemExit, KeyboardInterrupt))
                and type(tb) is TRACEBACK and exception_traceback(value) is tb
                and tb.tb_frame is frame and tb.tb_lasti == at and "__file__" not in frame.f_globals):
            return 1
        return None

    def fast_exit(watch):
        frame, profile = watch
        watch[:] = None, None  # nothing of the program stays alive through us
        pending_profile[0] = None
        if profile is not None and sys.getprofile() is profile:
            sys.setprofile(None)  # the main module never started
        if frame is None:
            return
        try:
            try_fast_exit(frame, watch)
        except BaseException:
            pass  # out of memory, a recursion limit the program set: the interpreter's exit

    def try_fast_exit(frame, watch):
        if _thread.get_ident() != main_thread:
            return
        try:
            sys._getframe(2)  # fast_exit's caller
            return  # called by the program (atexit._run_exitfuncs), not at exit
        except ValueError:
            pass
        for _ in range(20):
            if _thread._count() == 0:
                break
            time.sleep(0.0001)  # a joined thread may still be ending in C
        if (audit_hooks or sys.gettrace() is not None or sys.getprofile() is not None
                or _thread._count() != 0 or libc.getenv(b"PYTHONINSPECT")
                or gc.garbage or gc.callbacks or gc.get_debug()
                or "faulthandler" in sys.modules
                or sys.stdout is not std_streams[0]() or sys.stderr is not std_streams[1]()):
            return
        status = exit_status(frame)
        if status is None or finalizers_alive(watch):
            return
        for f in (sys.stdout, sys.stderr):
            if not f.closed:
                try:
                    f.flush()
                except BaseException:
                    return  # the interpreter tries again and reports it
        libc.fflush(None)
        os._exit(status)

    def audit(event, args):
        if event == "sys.addaudithook" and not audit_hooks:
            audit_hooks.append(True)  # the program's hooks may see the finalization
        elif event == "cpython.run_file" and pending_profile[0] is not None:
            # The interpreter turns to the main file: from here to its
            # frame's first instruction it runs no Python code.
            profile, pending_profile[0] = pending_profile[0], None
            sys.setprofile(profile)
            # The prelude's modules come after site in a plain start,
            # whose import ends (and moves it last) before the program's
            # first line imports them; here it ended just now.
            for name in prelude_order:
                if name in sys.modules:
                    sys.modules[name] = sys.modules.pop(name)

    def watch_main(main):
        """Registers fast_exit, the program's first exit function, with
        what it needs to know: the main module's frame, kept by a profile
        function that removes itself at the frame's call event, before its
        first instruction. Only the exit function's registration holds
        them, so a program that clears its exit functions frees them too."""
        main_dict = main.__dict__
        watch = [None, None]

        def profile(frame, event, arg):
            if event == "call" and frame.f_globals is main_dict and frame.f_back is None:
                sys.setprofile(None)
                watch[:] = frame, None

        watch[1] = profile
        atexit.register(fast_exit, watch)
        pending_profile[0] = profile  # set by audit as the main file's run starts

    def close_all_but(keep):
        lo = 3
        for fd in sorted(keep):
            if fd > lo:
                os.closerange(lo, fd)
            lo = max(lo, fd + 1)
        os.closerange(lo, 1 << 20)

    def program(fds):
        """The run's program, PID 2 of its namespaces: it takes the rest of
        them and its own space in the view, and becomes what a plain start
        would be. Returns True once it has."""
        script_fd, stdin, stdout, stderr, rep, netns = fds[:6]
        close_all_but(fds)
        try:
            # The run's cgroup first, before anything of the program runs.
            for fd in fds[6:]:
                write_all(fd, b"0")
                os.close(fd)
            # The program's process group is its PID 1's, as in a plain start.
            os.setpgid(0, 1)
            ops = records(read_all(script_fd))
            os.close(script_fd)
            check(libc.setns(netns, NEWNET), "enter the network namespace")
            os.close(netns)
            check(libc.unshare(NEWNS | NEWUTS | NEWIPC), "unshare")
            mount(None, b"/", None, MS_REC | MS_PRIVATE, None)
            run = build_space(ops)
            if run["proc"] is not None:
                mount(b"proc", run["proc"], b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
            # The rest of the set-up and the program run under the filter
            # (the capabilities and no_new_privs were the server's).
            if SECCOMP_ARGS is not None:
                fast_check(syscall(*SECCOMP_ARGS), "install the seccomp filter")
        except Exception as e:
            write_all(rep, record("E", str(e).encode()))
            os._exit(111)
        try:
            write_all(rep, record("S"))
            become_program(run, (stdin, stdout, stderr), rep)
            return True
        except BaseException as e:
            write_all(rep, record("X", ("exception on running command: %s" % e).encode()))
            os._exit(111)

    # --- serving ----------------------------------------------------------
    # The server's init (nsinit's serve) passes it each run: the script,
    # the program's stdin, stdout and stderr, the report pipe, the run's
    # network namespace, a new PID namespace whose PID 1 (a reaper) the
    # init has started, and the cgroup files the program joins. The server
    # forks the program into that namespace with CLONE_PARENT, so that the
    # init is its parent, answers with its pid and forgets the run: the
    # init sees it to its end.
    ctl = _socket.socket(fileno=3)
    # Looked up here: the socket type's first attribute lookup readies
    # the type, which would cost each program of the machine-code loop
    # (whose server never looks one up) some thirty page copies.
    ctl_detach = ctl.detach
    os.set_inheritable(3, False)
    thread_time = time.thread_time_ns
    # The server's own space goes now, once: a run then only mounts its
    # own (unmounting costs a wait for the kernel's RCU grace period, each
    # time).
    with open(os.path.join(user_site, "verl_score_space"), "rb") as f:
        detach_space(records(f.read()))
    # No program of the server's can regain a capability: the bounding
    # set (what an exec could grant) and the ambient and inheritable sets
    # go here, once; the server keeps its own effective set, which each
    # program's set-up needs, and a program loses that as it takes its
    # user. no_new_privs too: it changes only what an exec may gain, and
    # the server never execs. Each program installs the filter
    # (SECCOMP_ARGS) before anything of the run's is run.
    cap = 0
    while libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:
        cap += 1
    if ctypes.get_errno() != EINVAL or cap == 0:
        check(-1, "drop capability %d from the bounding set" % cap)
    if libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 and ctypes.get_errno() != EINVAL:
        check(-1, "clear the ambient capabilities")
    cap_header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    cap_data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable; twice
    check(libc.capget(cap_header, cap_data), "capget")
    cap_data[2] = cap_data[5] = 0
    check(libc.capset(cap_header, cap_data), "capset")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "set no_new_privs")
    seccomp_prog = None
    if seccomp_filter:

        class SockFprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        seccomp_records = ctypes.create_string_buffer(seccomp_filter, len(seccomp_filter))
        seccomp_prog = SockFprog(len(seccomp_filter) // 8, ctypes.addressof(seccomp_records))
    # The server runs on one CPU (its slot's among those allowed): its
    # forks, and the faults that each fork brings on the pages it writes
    # next, then flush that CPU's TLB alone. A run's program takes back the
    # CPUs a plain start has at once.
    if own_cpu != allowed_cpus:
        try:
            os.sched_setaffinity(0, own_cpu)
        except OSError:
            own_cpu = allowed_cpus  # the CPU went away: the server goes unpinned
    fd_size = 4
    CLONE_PARENT, SIGCHLD = 0x8000, 17
    SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(os.uname().machine)
    SYS_PRCTL = {"x86_64": 157, "aarch64": 167}.get(os.uname().machine)
    # The calls of a run's start go through a handle that keeps no copy of
    # errno (ctypes' copy costs page copies after each fork); a failure
    # reads errno itself.
    fast = ctypes.CDLL(None)
    errno_location = fast.__errno_location
    errno_location.restype = ctypes.c_void_p
    errno = ctypes.c_int.from_address(errno_location())

    def fast_check(rc, what):
        if rc != 0:
            e = errno.value
            raise OSError(e, what + ": " + os.strerror(e))

    fast_setns, fast_unshare = fast.setns, fast.unshare
    syscall = fast.syscall
    syscall.restype = ctypes.c_long
    CLONE_ARGS = tuple(ctypes.c_long(v) for v in (SYS_CLONE or 0, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0))
    # prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) through the same
    # handle, its arguments made beside the clone's (whose pages every
    # program has copied already by the time it installs the filter).
    SECCOMP_ARGS = None
    if seccomp_prog is not None:
        if SYS_PRCTL is None:
            raise OSError(38, "no prctl system call known for " + os.uname().machine)
        SECCOMP_ARGS = tuple(ctypes.c_long(v) for v in (SYS_PRCTL, PR_SET_SECCOMP, SECCOMP_MODE_FILTER,
                                                        ctypes.addressof(seccomp_prog), 0, 0))
    before_fork, after_fork_parent, after_fork_child = (
        ctypes.pythonapi.PyOS_BeforeFork, ctypes.pythonapi.PyOS_AfterFork_Parent, ctypes.pythonapi.PyOS_AfterFork_Child)
    for f in (before_fork, after_fork_parent, after_fork_child):
        f.restype = None

    if SYS_CLONE is None:
        raise OSError(38, "no clone system call known for " + os.uname().machine)

    def fork_for_init():
        """os.fork, but the child's parent is the server's (the init). The
        interpreter's steps before a fork and after it in the parent (its
        import lock, which no other thread here can hold, and the parent's
        fork hooks) are skipped where no hook was registered: after the
        fork, each step's pages would be copied."""
        if parent_hooks:
            before_fork()
        pid = syscall(*CLONE_ARGS)
        if pid == 0:
            after_fork_child()
            return 0
        if pid < 0:
            e = errno.value
            if parent_hooks:
                after_fork_parent()
            raise OSError(e, "clone: " + os.strerror(e))
        if parent_hooks:
            after_fork_parent()
        return pid

    # The loop in machine code (serveloop_x86_64.asm; TestServeLoopBytes
    # checks these bytes against it), for a server that calls no fork
    # hook: between forks it writes one page, where the loop in Python
    # below writes some sixty, each of which faults after every fork.
    SERVE_LOOP = {"x86_64": bytes.fromhex(
        "5341544889fb48c7432848000000c7433000000000b82f000000bf030000004889deba000000400f05"
        "4883f8fc74d7ba010000004885c00f8eb70100004883f8010f85a6010000807b48720f859c010000f7"
        "4330080000000f858f01000048837b28100f8284010000837b60010f857a010000837b64010f857001"
        "0000488b43584883e81048c1e802488983000100004883f8070f82530100004883f80d0f8749010000"
        "b8e4000000bf03000000488db3c00000000f05b8340100008bbb80000000be000000200f05ba030000"
        "004885c00f851d010000b8e4000000bf01000000488db3d00000000f05b8e4000000bf03000000488d"
        "b3e00000000f05b838000000bf1180000031f631d24531d24531c00f054885c00f84e1000000ba0400"
        "00000f8ccd000000488983a0000000b8e4000000bf03000000488db3f00000000f05486983d0000000"
        "00ca9a3b480383d8000000488983a8000000486983f000000000ca9a3b480383f80000004989c44869"
        "83c000000000ca9a3b480383c80000004c89e14829c148898bb0000000486983e000000000ca9a3b48"
        "0383e80000004929c44c89a3b8000000b801000000bf03000000488db3a0000000ba200000000f05ba"
        "050000004883f82075274531e4b803000000428b7ca3680f0549ffc44c3ba30001000072e8e919feff"
        "ffb802000000eb094889830801000089d0415c5bc3")}.get(os.uname().machine)
    CTX_IOV, CTX_REQUEST, CTX_CONTROL, CTX_FDS, CTX_NFDS, CTX_ERR = 56, 72, 88, 104, 256, 264

    def machine_loop():
        """The machine-code loop and its context's address, or None where
        it cannot run: another architecture, a fork hook to call, memory
        that may not be made executable."""
        if SERVE_LOOP is None or parent_hooks or ctypes.sizeof(ctypes.c_void_p) != 8:
            return None
        PROT_READ, PROT_WRITE, PROT_EXEC, MAP_PRIVATE, MAP_ANONYMOUS = 1, 2, 4, 2, 0x20
        page = os.sysconf("SC_PAGE_SIZE")
        mmap, mprotect = fast.mmap, fast.mprotect
        mmap.restype = ctypes.c_void_p
        mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
        mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        # The code's page, then the context's, which is the only page the
        # loop writes.
        mem = mmap(None, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        if mem is None or mem == ctypes.c_void_p(-1).value:
            return None
        ctypes.memmove(mem, SERVE_LOOP, len(SERVE_LOOP))
        if mprotect(mem, page, PROT_READ | PROT_EXEC) != 0:
            return None  # W^X memory: the loop in Python
        ctx = mem + page
        # The context is read and written through a memoryview: a ctypes
        # object made on an address is an audit event, whose hook call
        # would cost a program some thirty page copies.
        view_of = ctypes.pythonapi.PyMemoryView_FromMemory
        view_of.restype = ctypes.py_object
        view_of.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int)
        view = view_of(ctx, page, 0x200)  # PyBUF_WRITE
        for at, v in ((16, ctx + CTX_IOV), (24, 1), (32, ctx + CTX_CONTROL),  # msg_iov, msg_iovlen, msg_control
                      (CTX_IOV, ctx + CTX_REQUEST), (CTX_IOV + 8, 16)):
            view[at:at + 8] = v.to_bytes(8, "little")
        return ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_void_p)(mem), ctx, view

    def start(fds):
        pidns = fds[6]
        c0 = thread_time()
        # Something the server did imported a module (the C code of a
        # call may): it goes, as those of the start did.
        if len(sys.modules) != clean[0] or len(sys.path_importer_cache) != clean[1] or len(sys.path) != clean[2]:
            drop_extras()
        try:
            fast_check(fast_setns(pidns, NEWPID), "setns")
            t0 = time.monotonic_ns()
            c1 = thread_time()
            pid = fork_for_init()
            c2 = thread_time()
        except OSError as e:
            # The run goes the plain way (its report ends empty); a server
            # that cannot start runs ends, and the caller counts it.
            os.write(2, ("fork server: %s\n" % e).encode())
            os._exit(1)
        if pid == 0:
            return forked(fds)
        # The answer: the program's pid, its start, and what the run cost
        # the server (ReportCost, written by the init): its CPU time on the
        # start, and of that the fork.
        os.write(3, b"".join(v.to_bytes(8, "little", signed=True) for v in (pid, t0, c2 - c0, c2 - c1)))
        # The run's fds are all the server has from first_run_fd up.
        os.closerange(first_run_fd, max(fds) + 1)

    def forked(fds):
        """The program, just forked: it goes on as the run's program, with
        the run's fds but its PID namespace's."""
        if own_cpu != allowed_cpus:
            try:
                os.sched_setaffinity(0, allowed_cpus)
            except OSError:
                pass  # some went away since the server started: it keeps the server's
        ctl_detach()
        return program(fds[:6] + fds[7:])

    SOL_SOCKET, SCM_RIGHTS = _socket.SOL_SOCKET, _socket.SCM_RIGHTS

    # The fast exit's hooks, set once: every program inherits them. (The
    # streams weakly: they must die at exit as in a plain start, which
    # flushes them a last time.)
    std_streams = (_weakref.ref(sys.stdout), _weakref.ref(sys.stderr))
    fast_exit_ok = sys.version_info >= (3, 11) and bool(RETURNS)
    if fast_exit_ok:
        sys.addaudithook(audit)
    # What the server imported, the importers it made and its user site
    # are not a plain start's: they go from the server once, here, rather
    # than from each program (whose page copies that would cost).
    own_module = sys.modules[__name__]

    def drop_extras():
        for name in [name for name in sys.modules if name not in run_modules]:
            del sys.modules[name]
        for key in [key for key in sys.path_importer_cache if key not in plain_importers]:
            del sys.path_importer_cache[key]
        if user_site in sys.path:
            sys.path.remove(user_site)
        return len(sys.modules), len(sys.path_importer_cache), len(sys.path)

    loop = machine_loop()
    clean = drop_extras()
    # What the server made stays alive, so that a program's exit does not
    # free it (copying its pages), and frozen, out of every collection's
    # way (see become_program).
    keep = [locals(), globals(), own_module]
    keep.append(keep)
    # Free heap at the top goes back to the system: a program's address-
    # space allowance would count it and the program could use it too.
    libc.malloc_trim(0)
    gc.freeze()
    first_run_fd = os.dup(0)
    os.close(first_run_fd)
    if loop is not None:
        run_loop, ctx, view = loop
        code = run_loop(ctx)
        if code == 0:
            after_fork_child()
            n = int.from_bytes(view[CTX_NFDS:CTX_NFDS + 8], "little")
            return forked(view[CTX_FDS:CTX_FDS + 4 * n].cast("i").tolist())
        err = -int.from_bytes(view[CTX_ERR:CTX_ERR + 8], "little", signed=True)
        if code == 1 and err == 0:
            os._exit(0)  # the init hung up
        what = {1: "recvmsg", 2: "a malformed request", 3: "setns", 4: "clone", 5: "write"}.get(code, "code %d" % code)
        os.write(2, ("fork server: %s%s\n" % (what, ": " + os.strerror(err) if code != 2 else "")).encode())
        os._exit(1)
    while True:
        # The fds come close-on-exec: the reapers get none.
        msg, anc, _, _ = ctl.recvmsg(16, _socket.CMSG_SPACE(13 * fd_size), MSG_CMSG_CLOEXEC)
        if not msg:
            os._exit(0)
        fds = []
        for level, kind, data in anc:
            if level == SOL_SOCKET and kind == SCM_RIGHTS:
                fds += memoryview(data[:len(data) - len(data) % fd_size]).cast("i").tolist()
        if msg != b"r" or not 7 <= len(fds) <= 13:
            for fd in fds:
                os.close(fd)
            os.write(2, b"fork server: a malformed request\n")
            os._exit(1)  # the init answers requests in order: it cannot skip one
        if start(fds):
            return True


def _guarded():
    # Nothing but a run's program, set up, may go on to run the main file:
    # the server and the run's PID 1 end here whatever happens.
    try:
        if _server() is True:
            return
    except BaseException:
        import traceback, os
        os.write(2, traceback.format_exc().encode())
    import os
    os._exit(111)


_guarded()
# Only a run's program gets here. A plain start finds no usercustomize;
# neither does it.
raise ImportError("No module named 'usercustomize'", name="usercustomize")
