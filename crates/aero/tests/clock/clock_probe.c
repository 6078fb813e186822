/* Guest side of crates/aero/tests/clock.rs: counts interrupts against CLOCK_MONOTONIC.
 *
 *   clock_probe cmos HZ SECONDS  programs the RTC's periodic interrupt itself, as Windows'
 *                                HAL does (register A rate, register B PIE; Linux's rtc-cmos
 *                                interrupt handler acknowledges through register C), and
 *                                counts IRQ 8 in /proc/interrupts. (The RTC_IRQP_SET ioctl
 *                                would not do: Linux's RTC core emulates the periodic
 *                                interrupt with an hrtimer and never touches the chip.)
 *   clock_probe hpet1 HZ SECONDS programs HPET timer 1 periodic at HZ through /dev/mem; in
 *                                legacy-replacement mode it is IRQ 8, counted as above
 *   clock_probe irq N SECONDS    growth of /proc/interrupts line "N:" (all CPUs)
 *
 * Prints one line: AERO-CLOCK kind=... hz=... count=... ns=...
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/io.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Sum of the per-CPU counts on /proc/interrupts line "irq:"; -1 if absent. */
static long long irq_count(const char *irq) {
    FILE *f = fopen("/proc/interrupts", "r");
    char line[1024];
    size_t n = strlen(irq);
    long long total = -1;
    while (f && fgets(line, sizeof line, f)) {
        char *p = line;
        while (*p == ' ') p++;
        if (strncmp(p, irq, n) == 0 && p[n] == ':') {
            total = 0;
            p += n + 1;
            for (;;) {
                char *e;
                long long v = strtoll(p, &e, 10);
                if (e == p) break;
                total += v;
                p = e;
            }
            break;
        }
    }
    if (f) fclose(f);
    return total;
}

static int irq(const char *which, long seconds) {
    long long c0 = irq_count(which), t0 = now_ns();
    if (c0 < 0) { printf("AERO-CLOCK-ERROR no irq %s\n", which); return 1; }
    usleep(seconds * 1000000L);
    long long c1 = irq_count(which), t1 = now_ns();
    printf("AERO-CLOCK kind=irq%s hz=0 count=%lld ns=%lld\n", which, c1 - c0, t1 - t0);
    return 0;
}

static unsigned char cmos_read(unsigned char reg) {
    outb(reg, 0x70);
    return inb(0x71);
}

static void cmos_write(unsigned char reg, unsigned char value) {
    outb(reg, 0x70);
    outb(value, 0x71);
}

static int cmos(long hz, long seconds) {
    int rate = 0;
    for (int r = 3; r <= 15; r++)
        if (32768L >> (r - 1) == hz) rate = r;
    if (!rate) { printf("AERO-CLOCK-ERROR no RTC rate gives %ld Hz\n", hz); return 1; }
    if (iopl(3) < 0) { perror("AERO-CLOCK-ERROR iopl"); return 1; }
    unsigned char a = cmos_read(0x0A), b = cmos_read(0x0B);
    cmos_write(0x0A, (a & 0xF0) | rate);
    cmos_write(0x0B, b | 0x40);
    usleep(100000);
    long long c0 = irq_count("8"), t0 = now_ns();
    usleep(seconds * 1000000L);
    long long c1 = irq_count("8"), t1 = now_ns();
    cmos_write(0x0B, b);
    cmos_write(0x0A, a);
    printf("AERO-CLOCK kind=cmos hz=%ld count=%lld ns=%lld\n", hz, c1 - c0, t1 - t0);
    return 0;
}

#define HPET_BASE 0xFED00000UL

static int hpet1(long hz, long seconds) {
    int fd = open("/dev/mem", O_RDWR | O_SYNC);
    if (fd < 0) { perror("AERO-CLOCK-ERROR open /dev/mem"); return 1; }
    volatile uint64_t *hpet = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, HPET_BASE);
    if (hpet == MAP_FAILED) { perror("AERO-CLOCK-ERROR mmap HPET"); return 1; }
    uint64_t period_fs = hpet[0] >> 32;
    if (!(hpet[2] & 2)) { printf("AERO-CLOCK-ERROR HPET not in legacy-replacement mode\n"); return 1; }
    if (!(hpet[0x120 / 8] & 0x10)) { printf("AERO-CLOCK-ERROR timer 1 has no periodic mode\n"); return 1; }
    uint64_t ticks = 1000000000000000ULL / period_fs / (uint64_t)hz;
    uint64_t saved = hpet[0x120 / 8];
    /* Enabled, periodic, edge; VAL_SET lets the next comparator write set the period. */
    hpet[0x120 / 8] = (saved & ~0x7FFEULL) | 0x4C;
    hpet[0x128 / 8] = hpet[0xF0 / 8] + ticks;
    hpet[0x128 / 8] = ticks;
    usleep(100000);
    long long c0 = irq_count("8"), t0 = now_ns();
    usleep(seconds * 1000000L);
    long long c1 = irq_count("8"), t1 = now_ns();
    hpet[0x120 / 8] = saved & ~0x4ULL;
    printf("AERO-CLOCK kind=hpet1 hz=%ld count=%lld ns=%lld\n", hz, c1 - c0, t1 - t0);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc == 4 && strcmp(argv[1], "cmos") == 0) return cmos(atol(argv[2]), atol(argv[3]));
    if (argc == 4 && strcmp(argv[1], "hpet1") == 0) return hpet1(atol(argv[2]), atol(argv[3]));
    if (argc == 4 && strcmp(argv[1], "irq") == 0) return irq(argv[2], atol(argv[3]));
    fprintf(stderr, "usage: clock_probe cmos HZ SECONDS | hpet1 HZ SECONDS | irq N SECONDS\n");
    return 2;
}
