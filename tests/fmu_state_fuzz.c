/* fmu_state_fuzz.c: a C master that feeds an FMU crafted FMU states (tests/test_fmu_state_fuzz.py,
 * issue 38).  Compiled in one translation unit with the FMU's fmi2Functions.c (or, with
 * -DFUZZ_FMI3, fmi3Functions.c), linked with the model's C and the runtime, under ASan/UBSan.
 *
 * It runs an instance WARM communication steps, gets and serializes its state (the original),
 * then makes TRIES crafted copies of it: try i flips a bit of a byte, or puts a 4-byte word (one
 * of a list of edge values, or a random one) in place of a word of the state, once or a few times,
 * at places drawn from a generator seeded by (SEED, i); the state's checksum is then recomputed
 * (fmu_checksum of fmu_instance.c.inc over the bytes after the head) so the FMU's own checks of
 * the contents are what stands between the bytes and the stepper.  Each crafted state is
 * deserialized and set; when the FMU takes it, two communication steps are done, every variable
 * is read and the state is got and serialized again.  When the FMU refuses it, the instance must
 * be as it was: its state serialized again must be the original byte for byte.  The original is
 * then set back for the next try.
 *
 * The tries run in a child process (fork); a child that dies (a sanitizer report, a signal) or
 * hangs (no try done in 20 s) counts one crash and the next child goes on after that try.  The
 * last line on stdout: "tries T crashes C hangs H changed X refused_deserialize D refused_set R
 * accepted A stepped S first_crash F" (F -1: none).  Exit status 0 when every try was run.
 * Usage: ./fuzz TRIES SEED
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE                  /* MAP_ANONYMOUS (glibc) */
#define _DARWIN_C_SOURCE
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS MAP_ANON
#endif

#ifdef FUZZ_FMI3
#include "fmi3Functions.c"
#else
#include "fmi2Functions.c"
#endif

#define WARM 10                          /* communication steps before the state is got */
#define MAX_VR (FMU_NU + FMU_NY + FMU_NP + 2 * FMU_N)

/* What the children count (shared with the parent). */
typedef struct shared {
    long current, done, refused_deserialize, refused_set, accepted, stepped, changed;
} shared;

static long messages;                    /* the FMU's logged lines (counted, not printed) */
static double comm = FMU_AUTO ? 0.02 : 2 * FMU_DT;      /* the communication step */

/* ---- the FMI version's calls, one name each ---- */
#ifdef FUZZ_FMI3
typedef fmi3Instance inst_t;
typedef fmi3FMUState state_t;
static void log_message(fmi3InstanceEnvironment env, fmi3Status status, fmi3String category,
                        fmi3String message)
{
    (void)env; (void)status; (void)category; (void)message;
    ++messages;
}
static inst_t make(void)
{
    return fmi3InstantiateCoSimulation("fuzz", FMU_GUID, "", false, false, false, false, NULL, 0,
                                       NULL, log_message, NULL);
}
static int start(inst_t c)
{
    return fmi3EnterInitializationMode(c, false, 0.0, 0.0, false, 0.0) == fmi3OK
           && fmi3ExitInitializationMode(c) == fmi3OK;
}
static int do_step(inst_t c, double t, double H)
{
    fmi3Boolean event, stop, early;
    double last;
    return fmi3DoStep(c, t, H, true, &event, &stop, &early, &last) == fmi3OK;
}
static int get_reals(inst_t c, const unsigned *vr, size_t n, double *v)
{
    return fmi3GetFloat64(c, vr, n, v, n) == fmi3OK;
}
static int get_state(inst_t c, state_t *s) { return fmi3GetFMUState(c, s) == fmi3OK; }
static int set_state(inst_t c, state_t s) { return fmi3SetFMUState(c, s) == fmi3OK; }
static void free_state(inst_t c, state_t *s) { fmi3FreeFMUState(c, s); }
static int state_size(inst_t c, state_t s, size_t *size)
{
    return fmi3SerializedFMUStateSize(c, s, size) == fmi3OK;
}
static int serialize(inst_t c, state_t s, unsigned char *b, size_t size)
{
    return fmi3SerializeFMUState(c, s, b, size) == fmi3OK;
}
static int deserialize(inst_t c, const unsigned char *b, size_t size, state_t *s)
{
    return fmi3DeserializeFMUState(c, b, size, s) == fmi3OK;
}
static void finish(inst_t c) { fmi3FreeInstance(c); }
#else
typedef fmi2Component inst_t;
typedef fmi2FMUstate state_t;
static void logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status,
                   fmi2String category, fmi2String message, ...)
{
    (void)env; (void)name; (void)status; (void)category; (void)message;
    ++messages;
}
static const fmi2CallbackFunctions callbacks = {logger, calloc, free, NULL, NULL};
static inst_t make(void)
{
    return fmi2Instantiate("fuzz", fmi2CoSimulation, FMU_GUID, "", &callbacks, 0, 0);
}
static int start(inst_t c)
{
    return fmi2SetupExperiment(c, fmi2False, 0.0, 0.0, fmi2False, 0.0) == fmi2OK
           && fmi2EnterInitializationMode(c) == fmi2OK && fmi2ExitInitializationMode(c) == fmi2OK;
}
static int do_step(inst_t c, double t, double H) { return fmi2DoStep(c, t, H, 1) == fmi2OK; }
static int get_reals(inst_t c, const unsigned *vr, size_t n, double *v)
{
    return fmi2GetReal(c, vr, n, v) == fmi2OK;
}
static int get_state(inst_t c, state_t *s) { return fmi2GetFMUstate(c, s) == fmi2OK; }
static int set_state(inst_t c, state_t s) { return fmi2SetFMUstate(c, s) == fmi2OK; }
static void free_state(inst_t c, state_t *s) { fmi2FreeFMUstate(c, s); }
static int state_size(inst_t c, state_t s, size_t *size)
{
    return fmi2SerializedFMUstateSize(c, s, size) == fmi2OK;
}
static int serialize(inst_t c, state_t s, unsigned char *b, size_t size)
{
    return fmi2SerializeFMUstate(c, s, (fmi2Byte *)b, size) == fmi2OK;
}
static int deserialize(inst_t c, const unsigned char *b, size_t size, state_t *s)
{
    return fmi2DeSerializeFMUstate(c, (const fmi2Byte *)b, size, s) == fmi2OK;
}
static void finish(inst_t c) { fmi2FreeInstance(c); }
#endif

/* ---- the crafted states ---- */
static unsigned long long rng;

static unsigned long long next(void)             /* splitmix64 */
{
    unsigned long long z = (rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static size_t below(size_t n) { return n ? (size_t)(next() % n) : 0; }

/* The edge values a word is replaced with (sizes of this model among them). */
static const long edges[] = {
    0, 1, 2, 3, -1, -2, FMU_N, FMU_N - 1, FMU_N + 1, FMU_M, FMU_M - 1, FMU_M + 1, 2 * FMU_N,
    FMU_N * FMU_N, 0x7fffffffL, -0x7fffffffL - 1, 0xffffL, 0x10000L, 0x3ff00000L, 0x7ff00000L,
    0x7ff80000L, -0x100000L /* 0xfff00000: -inf's high word */, 0x7fefffffL, 0x00100000L,
    0x40000000L, 1000000L
};

static unsigned char *orig, *buf, *again;
static size_t size, head, n_words, n_ints, *ints;

static unsigned word_at(const unsigned char *b, size_t at)
{
    unsigned w;
    memcpy(&w, b + at, sizeof w);
    return w;
}

/* The word offsets of the original that look like ints (a count, a flag, an index: -1 ... 4096;
 * a 0 only when a neighbour is not 0, not a word of a long run of zeros). */
static void find_ints(void)
{
    size_t at;
    ints = (size_t *)malloc(sizeof(size_t) * (n_words + 1));
    for (at = head; at + 4 <= size; at += 4) {
        int v = (int)word_at(orig, at);
        if (v < -1 || v > 4096) continue;
        if (v == 0 && (at < head + 4 || word_at(orig, at - 4) == 0)
            && (at + 8 > size || word_at(orig, at + 4) == 0))
            continue;
        ints[n_ints++] = at;
    }
}

/* Try i's state in buf: the original with one to four changes, the checksum made anew. */
static void craft(long seed, long i)
{
    int changes, j;
    fmu_state_head h;
    rng = (unsigned long long)seed * 1000003ULL + (unsigned long long)i;   /* try i from (SEED, i) */
    changes = next() % 4 == 0 ? 2 + (int)below(3) : 1;
    memcpy(buf, orig, size);
    for (j = 0; j < changes; ++j) {
        int how = (int)below(3);
        size_t at;
        unsigned w;
        if (how == 0) {                                  /* a bit of a byte flipped */
            at = head + below(size - head);
            buf[at] ^= (unsigned char)(1u << below(8));
            continue;
        }
        at = how == 1 && n_ints ? ints[below(n_ints)] : head + 4 * below(n_words);
        switch (below(4)) {
        case 0: w = (unsigned)next(); break;
        case 1: w = word_at(buf, at) + (unsigned)below(7) - 3u; break;
        default: w = (unsigned)edges[below(sizeof edges / sizeof edges[0])]; break;
        }
        memcpy(buf + at, &w, sizeof w);
    }
    memcpy(&h, buf, sizeof h);
    h.check = fmu_checksum(buf + sizeof h, size - sizeof h);
    memcpy(buf, &h, sizeof h);
}

/* ---- the tries ---- */
static inst_t inst;
static state_t saved;
static double t_saved;
static unsigned vrs[MAX_VR + 1];

/* The instance's state serialized into `into` (size bytes): 1, or 0 when it cannot be got. */
static int snapshot(unsigned char *into)
{
    state_t s = NULL;
    size_t n = 0;
    int ok = get_state(inst, &s) && state_size(inst, s, &n) && n == size
             && serialize(inst, s, into, size);
    free_state(inst, &s);
    return ok;
}

static void one_try(long seed, long i, shared *sh)
{
    state_t s = NULL;
    double v[MAX_VR + 1];
    int j, ok;
    craft(seed, i);
    if (!deserialize(inst, buf, size, &s)) {
        ++sh->refused_deserialize;
    } else if (!set_state(inst, s)) {
        ++sh->refused_set;
        if (!snapshot(again) || memcmp(again, orig, size) != 0) ++sh->changed;
    } else {
        ++sh->accepted;
        for (j = 0, ok = 1; ok && j < 2; ++j) ok = do_step(inst, t_saved + j * comm, comm);
        sh->stepped += ok;
        get_reals(inst, vrs, MAX_VR, v);
        snapshot(again);
    }
    free_state(inst, &s);
    if (!set_state(inst, saved)) {
        fprintf(stderr, "try %ld: the original state is refused\n", i);
        exit(3);
    }
}

static void child(long first, long tries, long seed, shared *sh)
{
    long i;
    for (i = first; i < tries; ++i) {
        sh->current = i;
        alarm(20);
        one_try(seed, i, sh);
        ++sh->done;
    }
    alarm(0);
    free_state(inst, &saved);
    finish(inst);
    free(orig); free(buf); free(again); free(ints);
    exit(0);
}

int main(int argc, char **argv)
{
    long tries = argc > 1 ? atol(argv[1]) : 100, seed = argc > 2 ? atol(argv[2]) : 1;
    long first = 0, crashes = 0, hangs = 0, first_crash = -1;
    shared *sh;
    int i;
    for (i = 0; i < MAX_VR; ++i) vrs[i] = (unsigned)i;
    inst = make();
    if (!inst || !start(inst)) return 2;
    for (i = 0; i < WARM; ++i)
        if (!do_step(inst, i * comm, comm)) return 2;
    t_saved = WARM * comm;
    if (!get_state(inst, &saved) || !state_size(inst, saved, &size)) return 2;
    head = sizeof(fmu_state_head);
    n_words = (size - head) / 4;
    orig = (unsigned char *)malloc(size);
    buf = (unsigned char *)malloc(size);
    again = (unsigned char *)malloc(size);
    if (!orig || !buf || !again || !serialize(inst, saved, orig, size)) return 2;
    find_ints();
    sh = (shared *)mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                        -1, 0);
    if (sh == MAP_FAILED) return 2;
    memset(sh, 0, sizeof *sh);
    while (first < tries) {
        int status = 0;
        pid_t pid;
        fflush(NULL);
        pid = fork();
        if (pid < 0) return 2;
        if (pid == 0) child(first, tries, seed, sh);
        if (waitpid(pid, &status, 0) != pid) return 2;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) break;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 3) return 3;
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) ++hangs;
        else ++crashes;
        if (first_crash < 0) first_crash = sh->current;
        fprintf(stderr, "try %ld: %s (%s %d)\n", sh->current,
                WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? "hang" : "crash",
                WIFSIGNALED(status) ? "signal" : "exit", WIFSIGNALED(status) ? WTERMSIG(status)
                : WEXITSTATUS(status));
        ++sh->done;
        first = sh->current + 1;
    }
    printf("state %lu bytes, %lu int-like words\n", (unsigned long)size, (unsigned long)n_ints);
    printf("tries %ld crashes %ld hangs %ld changed %ld refused_deserialize %ld refused_set %ld "
           "accepted %ld stepped %ld first_crash %ld\n", sh->done, crashes, hangs, sh->changed,
           sh->refused_deserialize, sh->refused_set, sh->accepted, sh->stepped, first_crash);
    free_state(inst, &saved);
    finish(inst);
    free(orig); free(buf); free(again); free(ints);
    munmap(sh, sizeof *sh);
    return 0;
}
