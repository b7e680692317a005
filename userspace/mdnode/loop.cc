// SPDX-License-Identifier: GPL-2.0
//
// loop.cc - see loop.h.
#include "mdnode/loop.h"

#include <poll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "mdnode/log.h"

namespace mdnode {

namespace {

MDNODE_LOG_SUBSYSTEM("main");

} // namespace

EventLoop::~EventLoop()
{
	for (int fd : timer_fds_)
		close(fd);
}

void EventLoop::add_fd(const char *name, int fd, std::function<void()> fn)
{
	add({name, [fd] { return std::vector<int>{fd}; }, 1,
	     [fn = std::move(fn)](int, unsigned) {
		fn();
		return false;
	}});
}

mdr::Status EventLoop::add_timer(const char *name, int period_ms, std::function<void()> fn)
{
	const int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	const long ns = long(period_ms % 1000) * 1000000;
	const itimerspec its{{period_ms / 1000, ns}, {period_ms / 1000, ns}};

	if (fd < 0 || timerfd_settime(fd, 0, &its, nullptr)) {
		const int err = errno;

		if (fd >= 0)
			close(fd);
		return mdr::Error(-err, std::string("timerfd: ") + strerror(err));
	}
	timer_fds_.push_back(fd);
	add_fd(name, fd, [fd, fn = std::move(fn)] {
		uint64_t n;

		if (read(fd, &n, sizeof(n)) == sizeof(n))
			fn();
	});
	return {};
}

void EventLoop::run()
{
	while (!stop_) {
		std::vector<pollfd> pfds;
		std::vector<size_t> owner;	// source of each pollfd

		for (size_t i = 0; i < sources_.size(); i++)
			for (int fd : sources_[i].fds()) {
				pfds.push_back({fd, POLLIN, 0});
				owner.push_back(i);
			}
		// Work left behind: look, but do not wait.
		if (poll(pfds.data(), pfds.size(), backlog_.empty() ? -1 : 0) < 0) {
			if (errno != EINTR)
				log_error_rl("poll: %s", strerror(errno));
			continue;
		}

		std::set<std::pair<size_t, int>> due = std::exchange(backlog_, {});

		for (size_t k = 0; k < pfds.size(); k++)
			if (pfds[k].revents & (POLLIN | POLLERR | POLLHUP))
				due.emplace(owner[k], pfds[k].fd);
		// In the order the sources were added, each fd once a round.
		for (const auto &[i, fd] : due) {
			const Source &s = sources_[i];

			if (s.ready(fd, s.budget))
				backlog_.emplace(i, fd);
		}
		for (const auto &fn : after_round_)
			fn();
	}
}

} // namespace mdnode
