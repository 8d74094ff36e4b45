# The fork server's loop on x86-64 (GNU as; forkserver.py holds the bytes
# that `as` makes of it, and TestServeLoopBytes checks that they match).
#
# long serve_loop(struct ctx *c) serves runs until it returns: 0 in a
# forked program, or a code the server ends with. Between forks the server
# runs nothing but this: after a fork, each page the server writes next
# faults (and, while the program shares it, is copied), and the Python
# loop it replaces wrote some sixty pages a run. This loop writes one, the
# context's, and no stack between runs (its two pushes come once, on entry).
#
# A run comes as one request on fd 3: the byte 'r' and 7 to 13 fds (the
# script, stdin, stdout, stderr, report pipe, network namespace, PID
# namespace, then the cgroup files the program joins). The loop enters
# the PID namespace, forks the program into it with CLONE_PARENT (the
# server's parent, its init, is the program's), answers with four
# little-endian int64s (the program's pid, its start on CLOCK_MONOTONIC,
# and the server's CPU time on the start and of that on the fork, in ns),
# closes the run's fds and waits for the next.

	.intel_syntax noprefix

	# The context (forkserver.py fills it in: machine_loop): a msghdr whose iovec
	# and control buffer follow it.
	.equ MSG_CONTROLLEN, 40
	.equ MSG_FLAGS, 48
	.equ REQUEST, 72        # the request's byte (16 bytes)
	.equ CMSG_LEN, 88       # the control buffer (72 bytes)
	.equ CMSG_LEVEL, 96
	.equ CMSG_TYPE, 100
	.equ FDS, 104           # 13 fds at most
	.equ REPLY, 160         # pid, start, CPU on the start, CPU on the fork
	.equ CPU0, 192          # timespecs: CPU on the request's arrival,
	.equ START, 208         # the start,
	.equ CPU1, 224          # CPU before the fork,
	.equ CPU2, 240          # and after it
	.equ NFDS, 256          # out: how many fds the request had
	.equ ERR, 264           # out: a failed call's -errno

	.equ SYS_WRITE, 1
	.equ SYS_CLOSE, 3
	.equ SYS_RECVMSG, 47
	.equ SYS_CLONE, 56
	.equ SYS_CLOCK_GETTIME, 228
	.equ SYS_SETNS, 308
	.equ EINTR, 4
	.equ MSG_CMSG_CLOEXEC, 0x40000000
	.equ MSG_CTRUNC, 8
	.equ CLONE_NEWPID, 0x20000000
	.equ CLONE_PARENT_SIGCHLD, 0x8011
	.equ CLOCK_MONOTONIC, 1
	.equ CLOCK_THREAD_CPUTIME_ID, 3

	# ns(ts): the timespec at rbx+ts in ns, in rax.
	.macro NS ts
	imul rax, qword ptr [rbx+\ts], 1000000000
	add rax, qword ptr [rbx+\ts+8]
	.endm

	.macro CLOCK id, ts
	mov eax, SYS_CLOCK_GETTIME
	mov edi, \id
	lea rsi, [rbx+\ts]
	syscall
	.endm

serve_loop:
	push rbx
	push r12
	mov rbx, rdi
next:
	mov qword ptr [rbx+MSG_CONTROLLEN], 72
	mov dword ptr [rbx+MSG_FLAGS], 0
	mov eax, SYS_RECVMSG
	mov edi, 3
	mov rsi, rbx
	mov edx, MSG_CMSG_CLOEXEC
	syscall
	cmp rax, -EINTR
	je next
	mov edx, 1              # code 1: recvmsg failed (or, with rax 0, the caller hung up)
	test rax, rax
	jle fail
	# A request is 'r' and SCM_RIGHTS with 7 to 13 fds; anything else is
	# code 2.
	cmp rax, 1
	jne malformed
	cmp byte ptr [rbx+REQUEST], 'r'
	jne malformed
	test dword ptr [rbx+MSG_FLAGS], MSG_CTRUNC
	jnz malformed
	cmp qword ptr [rbx+MSG_CONTROLLEN], FDS-CMSG_LEN
	jb malformed
	cmp dword ptr [rbx+CMSG_LEVEL], 1   # SOL_SOCKET
	jne malformed
	cmp dword ptr [rbx+CMSG_TYPE], 1    # SCM_RIGHTS
	jne malformed
	mov rax, qword ptr [rbx+CMSG_LEN]
	sub rax, FDS-CMSG_LEN
	shr rax, 2
	mov qword ptr [rbx+NFDS], rax
	cmp rax, 7
	jb malformed
	cmp rax, 13
	ja malformed
	CLOCK CLOCK_THREAD_CPUTIME_ID, CPU0
	mov eax, SYS_SETNS
	mov edi, dword ptr [rbx+FDS+6*4]
	mov esi, CLONE_NEWPID
	syscall
	mov edx, 3              # code 3: setns failed
	test rax, rax
	jnz fail
	CLOCK CLOCK_MONOTONIC, START
	CLOCK CLOCK_THREAD_CPUTIME_ID, CPU1
	mov eax, SYS_CLONE
	mov edi, CLONE_PARENT_SIGCHLD
	xor esi, esi
	xor edx, edx
	xor r10d, r10d
	xor r8d, r8d
	syscall
	test rax, rax
	jz done                 # the program: 0
	mov edx, 4              # code 4: clone failed
	jl fail
	mov qword ptr [rbx+REPLY], rax
	CLOCK CLOCK_THREAD_CPUTIME_ID, CPU2
	NS START
	mov qword ptr [rbx+REPLY+8], rax
	NS CPU2
	mov r12, rax
	NS CPU0
	mov rcx, r12
	sub rcx, rax
	mov qword ptr [rbx+REPLY+16], rcx
	NS CPU1
	sub r12, rax
	mov qword ptr [rbx+REPLY+24], r12
	mov eax, SYS_WRITE
	mov edi, 3
	lea rsi, [rbx+REPLY]
	mov edx, 32
	syscall
	mov edx, 5              # code 5: the answer's write failed
	cmp rax, 32
	jne fail
	# The run's fds go: the server keeps nothing of it.
	xor r12d, r12d
close:
	mov eax, SYS_CLOSE
	mov edi, dword ptr [rbx+FDS+r12*4]
	syscall
	inc r12
	cmp r12, qword ptr [rbx+NFDS]
	jb close
	jmp next
malformed:
	mov eax, 2
	jmp done
fail:
	mov qword ptr [rbx+ERR], rax
	mov eax, edx
done:
	pop r12
	pop rbx
	ret
