/* src/net/track.c: the per-slot record of allow and deny entries (nesting
 * refused, identical entries refreshed, expired ones dropped after the
 * grace period, never before). */
#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

#include "net/track.h"
#include "tap.h"

static struct osb_nft_addr a4(const char *ip, unsigned prefix, bool deny)
{
    struct osb_nft_addr a = {.deny = deny, .family = AF_INET, .prefix = prefix};
    inet_pton(AF_INET, ip, a.addr);
    return a;
}

static void test_nesting(void)
{
    struct osb_track t = {0};
    struct osb_err e = {0};
    struct osb_nft_addr r24 = a4("10.202.0.0", 24, false);
    MUST(osb_track_check(&t, &r24, 0, &e));
    osb_track_put(&t, &r24, 0, 0);
    struct osb_nft_addr r8 = a4("10.0.0.0", 8, false);
    OK(osb_track_check(&t, &r8, 0, &e) < 0 && e.code == OSB_E_EXISTS,
       "a range enclosing one present is refused");
    struct osb_nft_addr r31 = a4("10.202.0.2", 31, false);
    OK(osb_track_check(&t, &r31, 0, &e) < 0, "a range inside one present is refused");
    OK(osb_track_check(&t, &r24, 0, &e) == 0, "the same range again is a refresh");
    struct osb_nft_addr other = a4("10.203.0.0", 24, false);
    OK(osb_track_check(&t, &other, 0, &e) == 0, "a disjoint range is fine");
    struct osb_nft_addr one = a4("10.202.0.7", 32, false);
    OK(osb_track_check(&t, &one, 0, &e) == 0, "a single address never conflicts");
    r8.deny = true;
    OK(osb_track_check(&t, &r8, 0, &e) == 0, "allow and deny ranges do not conflict");
    struct osb_nft_addr v6 = {.family = AF_INET6, .prefix = 8};
    v6.addr[0] = 10;
    OK(osb_track_check(&t, &v6, 0, &e) == 0, "families do not conflict");
    osb_track_free(&t);
}

static void test_expiry(void)
{
    struct osb_track t = {0};
    struct osb_err e = {0};
    struct osb_nft_addr r = a4("10.1.0.0", 16, false);
    osb_track_put(&t, &r, 1000, 0);
    struct osb_nft_addr inner = a4("10.1.2.0", 24, false);
    OK(osb_track_check(&t, &inner, 999, &e) < 0, "a live timed range still conflicts");
    OK(osb_track_check(&t, &inner, 1000, &e) == 0, "an expired range no longer conflicts");

    osb_track_put(&t, &r, 5000, 10);
    IS_INT(t.n, 1, "an identical entry is refreshed, not duplicated");
    IS_INT(t.v[0].expires_ms, 5000, "refresh: the later expiry wins");
    osb_track_put(&t, &r, 3000, 20);
    IS_INT(t.v[0].expires_ms, 5000, "refresh: an earlier expiry does not shorten it");
    osb_track_put(&t, &r, 0, 30);
    IS_INT(t.v[0].expires_ms, 0, "refresh: permanent wins");

    struct osb_nft_addr dns = a4("192.0.2.1", 32, false);
    osb_track_put(&t, &dns, 100, 0);
    struct osb_nft_addr dns2 = a4("192.0.2.2", 32, false);
    osb_track_put(&t, &dns2, 0, 100 + OSB_TRACK_GRACE_MS);
    IS_INT(t.n, 3, "an entry just past its expiry is kept (grace)");
    struct osb_nft_addr dns3 = a4("192.0.2.3", 32, false);
    osb_track_put(&t, &dns3, 0, 101 + OSB_TRACK_GRACE_MS);
    IS_INT(t.n, 3, "past the grace period it is dropped on the next put");
    bool gone = true;
    for (size_t i = 0; i < t.n; i++)
        gone &= memcmp(t.v[i].a.addr, dns.addr, 4) != 0;
    OK(gone, "the dropped entry is the expired one");
    osb_track_clear(&t);
    IS_INT(t.n, 0, "clear empties");
    osb_track_free(&t);
}

int main(void)
{
    test_nesting();
    test_expiry();
    return tap_done();
}
