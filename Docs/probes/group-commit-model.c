// A model of durable group commit in under 200 lines of C, to tell how much of commit-8's gap to
// SQLite NORMAL is Cairn's code and how much is this machine (Docs/Benchmarks.md).
//
// W writer threads each make N/W durable commits of one 140-byte record (about what one
// Cairn commit-8 record takes in the log) to a preallocated file. Designs:
//   solo        every writer pwrites and fdatasyncs its own record (no grouping)
//   serial      the queue's head leads: it gathers (yields while writers keep arriving,
//               each within 20 us of the last, for at most 100 us, or until all W are
//               queued), writes the whole queue with one pwrite, fdatasyncs, wakes the
//               group, hands the queue to the next head. Cairn's design.
//   pipelined K the leader hands the queue over right after its pwrite, so up to K groups
//               fdatasync at once; groups complete in order.
//   spin        serial, but a waiting writer yields in a loop, checking for its result, for
//               up to 1 ms before it sleeps, and the leader makes a system call to wake only
//               writers already asleep. Cairn's design since Options.commitSpinWait.
//
//   gcc -O2 -pthread Docs/probes/group-commit-model.c -o .build/group-commit-model
//   .build/group-commit-model serial 8 20000 /path/on/the/same/disk/model.dat
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { RECORD = 140 };

typedef struct Waiter {
    struct Waiter *next;
    int done;      // written under the lock, read atomically by a yielding owner
    int sleeping;  // under the lock: whether the owner waits on `wake`
    pthread_cond_t wake;
} Waiter;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn = PTHREAD_COND_INITIALIZER;
static Waiter *head, *tail;
static int fd, writers, pipelined, maxInFlight, inFlight;
static long perWriter, offset, syncs, nextTicket, completed;
static double spinLimit;  // seconds a waiting writer yields before it sleeps (spin)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int queued(void) {
    int n = 0;
    for (Waiter *w = head; w; w = w->next) n++;
    return n;
}

static void writeAndSync(int records, long at) {
    static __thread char buffer[RECORD * 512];
    memset(buffer, 1, (size_t)records * RECORD);
    if (pwrite(fd, buffer, (size_t)records * RECORD, at) < 0 || fdatasync(fd) != 0) { perror("write"); exit(1); }
}

// Called with the lock held by the queue's head; returns with it held.
static void gather(void) {
    int seen = queued();
    double start = now(), lastArrival = start;
    pthread_mutex_unlock(&lock);
    for (;;) {
        sched_yield();
        pthread_mutex_lock(&lock);
        int count = queued();
        pthread_mutex_unlock(&lock);
        double t = now();
        if (count >= writers || t - start >= 100e-6) break;
        if (count > seen) { seen = count; lastArrival = t; }
        else if (t - lastArrival >= 20e-6) break;
    }
    pthread_mutex_lock(&lock);
}

static void commit(void) {
    Waiter me = { .next = NULL, .done = 0 };
    pthread_cond_init(&me.wake, NULL);
    pthread_mutex_lock(&lock);
    if (tail) tail->next = &me; else head = &me;
    tail = &me;
    if (spinLimit > 0 && head != &me) {
        pthread_mutex_unlock(&lock);
        double start = now();
        while (!__atomic_load_n(&me.done, __ATOMIC_ACQUIRE) && __atomic_load_n(&head, __ATOMIC_ACQUIRE) != &me
               && now() - start < spinLimit)
            sched_yield();
        pthread_mutex_lock(&lock);
    }
    while (!me.done && head != &me) {
        me.sleeping = 1;
        pthread_cond_wait(&me.wake, &lock);
        me.sleeping = 0;
    }
    if (me.done) { pthread_mutex_unlock(&lock); pthread_cond_destroy(&me.wake); return; }
    if (!pipelined) gather();
    while (pipelined && inFlight >= maxInFlight) pthread_cond_wait(&turn, &lock);
    Waiter *first = head, *last = tail;
    int records = queued();
    long at = offset, ticket = nextTicket++;
    offset += (long)records * RECORD;
    if (pipelined) {  // hand the (now empty) queue over before syncing
        head = tail = NULL;
        inFlight++;
        pthread_mutex_unlock(&lock);
        writeAndSync(records, at);
        pthread_mutex_lock(&lock);
        while (completed != ticket) pthread_cond_wait(&turn, &lock);
        completed++;
        inFlight--;
        pthread_cond_broadcast(&turn);
    } else {
        pthread_mutex_unlock(&lock);
        writeAndSync(records, at);
        pthread_mutex_lock(&lock);
        __atomic_store_n(&head, last->next, __ATOMIC_RELEASE);
        if (!head) tail = NULL;
        if (head && head->sleeping) pthread_cond_signal(&head->wake);
    }
    syncs++;
    // Under the lock, so no woken writer can leave (and free its waiter) before the walk ends.
    for (Waiter *w = first;; w = w->next) {
        int isLast = w == last;
        if (w != &me) {
            int sleeping = w->sleeping;
            __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
            if (sleeping) pthread_cond_signal(&w->wake);
        }
        if (isLast) break;
    }
    pthread_mutex_unlock(&lock);
    pthread_cond_destroy(&me.wake);
}

static void *soloWriter(void *arg) {
    (void)arg;
    for (long i = 0; i < perWriter; i++) {
        pthread_mutex_lock(&lock);
        long at = offset;
        offset += RECORD;
        syncs++;
        pthread_mutex_unlock(&lock);
        writeAndSync(1, at);
    }
    return NULL;
}

static void *groupWriter(void *arg) {
    (void)arg;
    for (long i = 0; i < perWriter; i++) commit();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s solo|serial|spin|pipelined[K] WRITERS COMMITS FILE\n", argv[0]);
        return 2;
    }
    int solo = strcmp(argv[1], "solo") == 0;
    if (strcmp(argv[1], "spin") == 0) spinLimit = 1e-3;
    pipelined = strncmp(argv[1], "pipelined", 9) == 0;
    maxInFlight = pipelined ? (argv[1][9] ? atoi(argv[1] + 9) : 2) : 1;
    writers = atoi(argv[2]);
    perWriter = atol(argv[3]) / writers;
    fd = open(argv[4], O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror("open"); return 1; }
    // Preallocated and synced, as Cairn's log segments are: later syncs flush data only.
    char *zeros = calloc(1, 1 << 20);
    for (int i = 0; i < 64; i++)
        if (write(fd, zeros, 1 << 20) != 1 << 20) { perror("write"); return 1; }
    fdatasync(fd);
    pthread_t threads[256];
    double start = now();
    for (int i = 0; i < writers; i++) pthread_create(&threads[i], NULL, solo ? soloWriter : groupWriter, NULL);
    for (int i = 0; i < writers; i++) pthread_join(threads[i], NULL);
    double seconds = now() - start;
    long commits = perWriter * writers;
    printf("%s writers %d: %.0f commits/s, %.3f fdatasync/commit\n", argv[1], writers, commits / seconds,
           (double)syncs / commits);
    unlink(argv[4]);
    return 0;
}
