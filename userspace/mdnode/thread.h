// SPDX-License-Identifier: GPL-2.0
//
// thread.h - mdnode's threads besides the event loop's take no signal.
#ifndef MDNODE_THREAD_H
#define MDNODE_THREAD_H

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace mdnode {

// A thread that takes no signal. SIGTERM must reach the event loop's
// signalfd (a clean stop writes a checkpoint), not end the process from
// some other thread where it is not blocked; a thread inherits the signal
// mask of its creator, which may run before main() blocks them.
template <typename F>
std::thread thread_without_signals(F &&f)
{
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	std::thread t(std::forward<F>(f));
	pthread_sigmask(SIG_SETMASK, &old, nullptr);
	return t;
}

}  // namespace mdnode

#endif
