// SPDX-License-Identifier: GPL-2.0
//
// gateway.h - what the gateway client's two files share (gateway.cc: the
// calls; gateway_watch.cc: the watches): the endpoints, libcurl's handles
// and the errors of a transfer. Included by lib/etcd/ alone.
#ifndef MDR_ETCD_GATEWAY_H
#define MDR_ETCD_GATEWAY_H

#include <memory>
#include <string>
#include <vector>

#include <curl/curl.h>

#include "lib/etcd/client.h"

namespace mdr::etcd::gateway {

struct EasyDeleter {
	void operator()(CURL *c) const { curl_easy_cleanup(c); }
};
using Easy = std::unique_ptr<CURL, EasyDeleter>;

struct SlistDeleter {
	void operator()(curl_slist *l) const { curl_slist_free_all(l); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

// A handle set up for a POST of body (kept alive by the caller) to url,
// with the options every transfer shares; headers must outlive it too.
void setup_post(CURL *c, const std::string &url, const std::string &body,
		curl_slist *headers, int dial_timeout_ms);

// The JSON content type, for setup_post().
Slist json_headers();

// A failed transfer as a -errno: a refused connection -ECONNREFUSED, a
// timeout -ETIMEDOUT, a cut stream -ECONNRESET, ...
int errno_of_curl(CURLcode rc);

// The watch of a client (gateway_watch.cc).
std::unique_ptr<Watch> start_watch(const Options &options, size_t first_endpoint,
				   const WatchSpec &spec, WatchCallback cb);

} // namespace mdr::etcd::gateway

#endif // MDR_ETCD_GATEWAY_H
