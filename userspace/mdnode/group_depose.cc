// SPDX-License-Identifier: GPL-2.0
//
// group_depose.cc - the revoke of a dead leader's lease (see group_depose.h).
#include "mdnode/group_depose.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "mdnode/thread.h"

namespace mdnode {

mdr::Result<std::unique_ptr<Deposer>> Deposer::start(const mdr::etcd::Options &etcd,
						     std::string leader_key)
{
	auto client = mdr::etcd::connect(etcd);
	if (!client.ok())
		return mdr::Error(client.error(), "etcd: " + client.message());
	const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0)
		return mdr::Error(-errno, std::string("eventfd: ") + strerror(errno));

	std::unique_ptr<Deposer> d(new Deposer(std::move(client).value(), std::move(leader_key),
					       efd));
	d->thread_ = thread_without_signals([p = d.get()] { p->run(); });
	return d;
}

Deposer::Deposer(std::unique_ptr<mdr::etcd::Client> client, std::string leader_key, int efd)
	: client_(std::move(client)), key_(std::move(leader_key)), efd_(efd)
{
}

Deposer::~Deposer()
{
	{
		std::lock_guard lock(lock_);
		stopping_ = true;
	}
	cv_.notify_all();
	if (thread_.joinable())
		thread_.join();
	close(efd_);
}

mdr::Status Deposer::depose(int64_t epoch, int64_t lease)
{
	if (epoch <= 0)
		return mdr::Error(-EINVAL, "no epoch " + std::to_string(epoch) + " to depose");
	{
		std::lock_guard lock(lock_);
		if (asked_ || running_)
			return mdr::Error(-EBUSY, "a deposition is under way");
		asked_ = epoch;
		asked_lease_ = lease;
	}
	cv_.notify_all();
	return {};
}

std::optional<Deposer::Outcome> Deposer::take()
{
	uint64_t n;

	(void)!read(efd_, &n, sizeof(n));
	std::lock_guard lock(lock_);
	return std::exchange(outcome_, std::nullopt);
}

void Deposer::run()
{
	std::unique_lock lock(lock_);

	for (;;) {
		cv_.wait(lock, [this] { return stopping_ || asked_; });
		if (stopping_)
			return;
		const int64_t epoch = std::exchange(asked_, 0);
		const int64_t lease = std::exchange(asked_lease_, 0);
		running_ = true;
		lock.unlock();
		mdr::Result<bool> r = revoke(epoch, lease);
		lock.lock();
		running_ = false;
		outcome_ = Outcome{epoch, std::move(r)};
		const uint64_t one = 1;
		(void)!write(efd_, &one, sizeof(one));
	}
}

mdr::Result<bool> Deposer::revoke(int64_t epoch, int64_t lease)
{
	if (!lease) {
		auto r = client_->get(key_);
		if (!r.ok())
			return mdr::Error(r.error(), "reading " + key_ + ": " + r.message());
		if (r.value().kvs.empty())
			return false;
		const mdr::etcd::KeyValue &kv = r.value().kvs[0];
		if (kv.create_revision != epoch || kv.lease == 0)
			return false;
		lease = kv.lease;
	}
	mdr::Status s = client_->revoke(lease);
	if (s.ok())
		return true;
	if (s.error() == -ENOENT)
		return false;	// it lapsed meanwhile
	return mdr::Error(s.error(), "revoking lease " + std::to_string(lease) + ": " +
				     s.message());
}

} // namespace mdnode
