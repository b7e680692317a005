// SPDX-License-Identifier: GPL-2.0
//
// test_conn_limits.cc - the connection caps of mdnode's transport
// (rdma_server.h, connection_cap()): max-connections for all,
// admin-connections kept for admins, max-connections-per-tenant for the
// hosts of one tenant.
#include <cstring>

#include <linux/mdroute_wire.h>

#include "mdnode/rdma_server.h"

#include "tests/common/cmocka_cxx.h"

namespace {

using mdnode::ConnCounts;
using mdnode::connection_cap;
using mdnode::ServerOptions;

ServerOptions caps(uint32_t max, uint32_t reserved, uint32_t per_tenant)
{
	ServerOptions o;

	o.max_connections = max;
	o.admin_reserved = reserved;
	o.max_per_tenant = per_tenant;
	return o;
}

bool refused(const char *why, const char *what)
{
	return why && strstr(why, what);
}

// Hosts stop where only the admins' slots are left; admins go on to the
// last slot, and nobody past it.
void test_admins_keep_their_slots(void **)
{
	const ServerOptions o = caps(10, 3, 100);

	assert_null(connection_cap(o, MDR_ROLE_HOST, {.total = 6, .hosts = 6, .of_tenant = 6}));
	assert_true(refused(connection_cap(o, MDR_ROLE_HOST, {.total = 7, .hosts = 7}),
			    "reserved for admin"));
	assert_null(connection_cap(o, MDR_ROLE_ADMIN, {.total = 7, .hosts = 7}));
	assert_null(connection_cap(o, MDR_ROLE_ADMIN, {.total = 9, .hosts = 7}));
	assert_true(refused(connection_cap(o, MDR_ROLE_ADMIN, {.total = 10, .hosts = 7}),
			    "max-connections"));
	// Admins in the reserve take nothing from the hosts.
	assert_null(connection_cap(o, MDR_ROLE_HOST, {.total = 9, .hosts = 6}));
	assert_true(refused(connection_cap(o, MDR_ROLE_HOST, {.total = 10, .hosts = 6}),
			    "max-connections"));
}

// A tenant's hosts stop at its cap, whatever room the others leave.
void test_a_tenant_is_capped(void **)
{
	const ServerOptions o = caps(100, 4, 5);

	assert_null(connection_cap(o, MDR_ROLE_HOST, {.total = 20, .hosts = 20, .of_tenant = 4}));
	assert_true(refused(connection_cap(o, MDR_ROLE_HOST,
					   {.total = 20, .hosts = 20, .of_tenant = 5}),
			    "per-tenant"));
	assert_null(connection_cap(o, MDR_ROLE_ADMIN, {.total = 20, .hosts = 20, .of_tenant = 5}));
}

// A reserve as large as the table still leaves hosts one slot.
void test_hosts_keep_one_slot(void **)
{
	const ServerOptions o = caps(4, 16, 100);

	assert_null(connection_cap(o, MDR_ROLE_HOST, {.total = 0}));
	assert_true(refused(connection_cap(o, MDR_ROLE_HOST, {.total = 1, .hosts = 1}),
			    "reserved for admin"));
	const ServerOptions none = caps(4, 0, 100);
	assert_null(connection_cap(none, MDR_ROLE_HOST, {.total = 3, .hosts = 3}));
	assert_true(refused(connection_cap(none, MDR_ROLE_HOST, {.total = 4, .hosts = 4}),
			    "max-connections"));
}

} // namespace

int main()
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_admins_keep_their_slots),
		cmocka_unit_test(test_a_tenant_is_capped),
		cmocka_unit_test(test_hosts_keep_one_slot),
	};

	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
