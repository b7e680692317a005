// SPDX-License-Identifier: GPL-2.0
//
// loop.h - mdnode's event loop: one thread polls the fds of its sources
// and runs their handlers and its timers; nothing in it blocks.
//
// Per-source budgets: a handler is given at most its budget of events to
// take in one round and says whether it left work behind; the loop then
// comes back to it in the next round without waiting for its fd, after
// every other source had its turn. So a flood on one source (completions
// of many connections) cannot starve the others (journal completions, the
// copier, the tick).
//
//	EventLoop loop;
//	loop.add({"rdma", [&] { return srv.fds(); }, 256,
//		  [&](int fd, unsigned budget) { return srv.process(fd, budget); }});
//	loop.add_timer("tick", 50, [&] { node.tick(); });
//	loop.run();	// until stop()
#ifndef MDNODE_LOOP_H
#define MDNODE_LOOP_H

#include <functional>
#include <set>
#include <utility>
#include <vector>

#include "lib/util/result.h"

namespace mdnode {

class EventLoop {
public:
	struct Source {
		const char *name;
		// The fds to poll for POLLIN, asked each round (they may change).
		std::function<std::vector<int>()> fds;
		unsigned budget;	// events per round, for ready()
		// fd is readable, or ready() left work on it: take at most
		// budget events; true when work is left.
		std::function<bool(int fd, unsigned budget)> ready;
	};

	EventLoop() = default;
	~EventLoop();
	EventLoop(const EventLoop &) = delete;
	EventLoop &operator=(const EventLoop &) = delete;

	void add(Source s) { sources_.push_back(std::move(s)); }
	// A source of one fd whose handler takes what there is.
	void add_fd(const char *name, int fd, std::function<void()> fn);
	// Calls fn every period_ms (a timerfd; rounds missed are run once).
	mdr::Status add_timer(const char *name, int period_ms, std::function<void()> fn);
	// Called after every round, in the order added: work a round leaves
	// for its end (a replica's batch of records) and checks that end the
	// loop.
	void after_round(std::function<void()> fn) { after_round_.push_back(std::move(fn)); }

	// Runs rounds until stop().
	void run();
	void stop() { stop_ = true; }

private:
	std::vector<Source> sources_;
	std::vector<int> timer_fds_;
	std::vector<std::function<void()>> after_round_;
	// (source index, fd) whose handler left work in the last round.
	std::set<std::pair<size_t, int>> backlog_;
	bool stop_ = false;
};

} // namespace mdnode

#endif // MDNODE_LOOP_H
