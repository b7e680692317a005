// SPDX-License-Identifier: GPL-2.0
//
// ioctl_fuzz.cc - throws random and boundary argument blocks at every
// command of /dev/mdroute-control and checks the module answers each with
// an errno (never a crash, a hang or a changed state).
//
//   mdr-test-ioctl-fuzz [ITERATIONS] [SEED]
//
// Runs as root inside a VM with mdroute loaded and nothing attached or
// bound. Exit: 0 pass, 1 fail. The VM harness checks the kernel log.
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/mdroute.h>

namespace {

constexpr unsigned kCommands = 16;	// ours are 0..7; the rest must be ENOTTY
constexpr size_t kMaxSize = 512;

unsigned long make_request(unsigned dir, unsigned nr, size_t size)
{
	return _IOC(dir, MDR_IOCTL_TYPE, nr, size);
}

void fill_header(std::vector<uint8_t> &buf, size_t size, uint32_t flags)
{
	struct mdr_ioctl_hdr h = {};

	h.version[0] = MDR_IOCTL_VERSION_MAJOR;
	h.version[1] = MDR_IOCTL_VERSION_MINOR;
	h.data_size = static_cast<uint32_t>(size);
	h.flags = flags;
	std::memcpy(buf.data(), &h, sizeof(h));
}

// Sizes of our commands' arguments, by _IOC_NR.
size_t command_size(unsigned nr)
{
	switch (nr) {
	case MDR_CMD_VERSION: return sizeof(struct mdr_ioctl_version);
	case MDR_CMD_BIND:
	case MDR_CMD_UNBIND: return sizeof(struct mdr_ioctl_bind);
	case MDR_CMD_ATTACH: return sizeof(struct mdr_ioctl_attach);
	case MDR_CMD_DETACH: return sizeof(struct mdr_ioctl_detach);
	case MDR_CMD_LIST:
	case MDR_CMD_DEV_LIST: return sizeof(struct mdr_ioctl_list);
	case MDR_CMD_STATUS: return sizeof(struct mdr_ioctl_status);
	default: return 64;
	}
}

// Keep well-formed ATTACH requests from dialling random addresses: point
// them at a port of the loopback address nobody listens on.
void tame_attach(std::vector<uint8_t> &buf)
{
	struct mdr_ioctl_attach a;

	std::memcpy(&a, buf.data(), sizeof(a));
	a.target.family = 2;	// AF_INET
	std::memset(a.target.addr, 0, sizeof(a.target.addr));
	a.target.addr[0] = 127;
	a.target.addr[3] = 1;
	a.target.port = 9;
	std::memcpy(buf.data(), &a, sizeof(a));
}

} // namespace

int main(int argc, char **argv)
{
	unsigned long iterations = argc > 1 ? std::strtoul(argv[1], nullptr, 0) : 20000;
	unsigned long seed = argc > 2 ? std::strtoul(argv[2], nullptr, 0) : 1;
	std::mt19937_64 rng(seed);
	std::vector<uint8_t> buf(kMaxSize + 64);
	unsigned long accepted = 0, refused = 0;
	int fd;

	fd = open("/dev/" MDR_CONTROL_NAME, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		perror("open /dev/" MDR_CONTROL_NAME);
		return 1;
	}
	for (unsigned long i = 0; i < iterations; i++) {
		unsigned nr = rng() % kCommands;
		unsigned mode = rng() % 4;
		unsigned dir = _IOC_READ | _IOC_WRITE;
		size_t size = command_size(nr);

		for (auto &b : buf)
			b = static_cast<uint8_t>(rng());
		switch (mode) {
		case 0:	// anything: direction, size and bytes
			dir = rng() % 4;
			size = rng() % kMaxSize;
			break;
		case 1:	// sizes around the right one
			size = size + (rng() % 17) - 8;
			fill_header(buf, size, 0);
			break;
		case 2:	// a good header, a random body, random flags bits
			fill_header(buf, size, rng() % 2 ? 0 : static_cast<uint32_t>(rng()));
			break;
		default:	// a good header and a zero body but one byte
			std::memset(buf.data(), 0, buf.size());
			fill_header(buf, size, static_cast<uint32_t>(rng() % 2));
			if (size > sizeof(struct mdr_ioctl_hdr))
				buf[sizeof(struct mdr_ioctl_hdr) +
				    rng() % (size - sizeof(struct mdr_ioctl_hdr))] =
					static_cast<uint8_t>(rng());
			break;
		}
		if (nr == MDR_CMD_ATTACH && size == sizeof(struct mdr_ioctl_attach))
			tame_attach(buf);
		size &= _IOC_SIZEMASK;
		if (ioctl(fd, make_request(dir, nr, size), buf.data()) == 0) {
			accepted++;
			// a bind that got through holds a device: give it back
			if (nr == MDR_CMD_BIND) {
				struct mdr_ioctl_bind b;

				std::memcpy(&b, buf.data(), sizeof(b));
				std::memset(&b.hdr, 0, sizeof(b.hdr));
				b.hdr.version[1] = MDR_IOCTL_VERSION_MINOR;
				b.hdr.data_size = sizeof(b);
				b.major = b.minor = b.lbs = 0;
				b.size = 0;
				if (ioctl(fd, MDR_IOC_UNBIND, &b) != 0) {
					perror("unbind after a fuzzed bind");
					return 1;
				}
			}
		} else {
			refused++;
			if (errno == 0 || errno > 4095) {
				std::fprintf(stderr, "iteration %lu: odd errno %d\n", i, errno);
				return 1;
			}
		}
	}

	// The module still answers and holds nothing.
	struct mdr_ioctl_list l = {};
	l.hdr.version[1] = MDR_IOCTL_VERSION_MINOR;
	l.hdr.data_size = sizeof(l);
	if (ioctl(fd, MDR_IOC_LIST, &l) != 0 || l.total != 0) {
		std::fprintf(stderr, "after fuzzing: LIST failed or shows %u volumes\n", l.total);
		return 1;
	}
	if (ioctl(fd, MDR_IOC_DEV_LIST, &l) != 0 || l.total != 0) {
		std::fprintf(stderr, "after fuzzing: DEV_LIST failed or shows %u devices\n", l.total);
		return 1;
	}
	std::printf("ioctl fuzz: %lu calls (seed %lu): %lu accepted, %lu refused\n",
		    iterations, seed, accepted, refused);
	close(fd);
	return 0;
}
