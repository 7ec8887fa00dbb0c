/* A fake libnvidia-ml.so.1 for tests on machines without a GPU.
 *
 * The tests load it through the REAL nvidia-ml-py (pynvml), so the collector's NVML calls, struct
 * layouts and error handling are exercised as on a GPU box. Struct layouts follow pynvml's c_nvml*
 * classes. Configured by environment variables, read at nvmlInit time:
 *
 *   FAKE_NVML_INIT_ERROR   NVML return code for nvmlInit (9 = driver not loaded)
 *   FAKE_NVML_GPUS         number of GPUs (default 1; 0 = none)
 *   FAKE_NVML_NAME         product name (default "NVIDIA H100 80GB HBM3")
 *   FAKE_NVML_TOTAL_MIB    memory per GPU in MiB (default 81559)
 *   FAKE_NVML_USED_MIB     used MiB per GPU, comma list (default 1)
 *   FAKE_NVML_UTIL         SM utilization %% per GPU, comma list (default 0)
 *   FAKE_NVML_LOST         index of a GPU that is lost (GPU_IS_LOST on every query), -1 none
 *   FAKE_NVML_THROTTLE     clocks-event reason bitmask, decimal (default 1 = idle)
 *   FAKE_NVML_SM_MHZ       current SM clock (default 1980), max is FAKE_NVML_SM_MAX_MHZ (1980)
 *   FAKE_NVML_POWER_W / FAKE_NVML_POWER_LIMIT_W / FAKE_NVML_POWER_MAX_W
 *   FAKE_NVML_TEMP_C
 *   FAKE_NVML_PCIE         "curgen,maxgen,curwidth,maxwidth" (default 5,5,16,16)
 *   FAKE_NVML_NVLINKS      active NVLinks per GPU (default 0)
 *   FAKE_NVML_NVLINK_MODE  "switch" (NVSwitch fabric) or "pairs" (GPU 2k <-> 2k+1 bridges)
 *   FAKE_NVML_TOPO         topology level between GPUs without NVLink (default 30 = PHB)
 *   FAKE_NVML_P2P          P2P read status between GPUs (default 0 = OK; 1 = chipset not supported)
 *   FAKE_NVML_PROCS        "gpu:pid:mib;gpu:pid:mib" compute processes
 *   FAKE_NVML_ECC          uncorrectable volatile ECC errors per GPU (default 0)
 *   FAKE_NVML_UNSUPPORTED  comma list of metric groups answering NOT_SUPPORTED:
 *                          power,temperature,utilization,throttle,pcie,ecc,mig,processes
 *
 * Compiled with -DFAKE_MINIMAL, the optional functions are not exported at all (an old driver):
 * pynvml then raises FunctionNotFound for them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
#define OK 0
#define ERR_UNINITIALIZED 1
#define ERR_INVALID_ARGUMENT 2
#define ERR_NOT_SUPPORTED 3
#define ERR_INSUFFICIENT_SIZE 7
#define ERR_GPU_IS_LOST 15
#define MAX_GPUS 16
#define MAX_PROCS 32

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;

typedef struct {
    int index;
} fake_device;

static fake_device devices[MAX_GPUS];
static int initialized = 0;
static int gpu_count = 1;

static const char *env(const char *name, const char *dflt) {
    const char *v = getenv(name);
    return (v && *v) ? v : dflt;
}

static long env_int(const char *name, long dflt) {
    const char *v = getenv(name);
    return (v && *v) ? strtol(v, NULL, 10) : dflt;
}

/* the idx-th integer of a comma list, else the last one given, else dflt */
static long list_int(const char *name, int idx, long dflt) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    long last = dflt;
    for (int i = 0; *v; i++) {
        char *end;
        long x = strtol(v, &end, 10);
        if (end == v) break;
        last = x;
        if (i == idx) return x;
        v = (*end == ',') ? end + 1 : end;
        if (*end != ',') break;
    }
    return last;
}

static int unsupported(const char *group) {
    const char *v = getenv("FAKE_NVML_UNSUPPORTED");
    if (!v) return 0;
    size_t n = strlen(group);
    for (const char *p = v; (p = strstr(p, group)) != NULL; p += n) {
        if ((p == v || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return 1;
    }
    return 0;
}

static int dev_index(void *device) {
    if (!device) return -1;
    fake_device *d = (fake_device *)device;
    if (d < devices || d >= devices + MAX_GPUS) return -1;
    return d->index;
}

#define CHECK_DEVICE(dev)                                            \
    int idx = dev_index(dev);                                        \
    if (!initialized) return ERR_UNINITIALIZED;                      \
    if (idx < 0 || idx >= gpu_count) return ERR_INVALID_ARGUMENT;    \
    if (idx == env_int("FAKE_NVML_LOST", -1)) return ERR_GPU_IS_LOST;

static void bus_id(int idx, char *out, size_t n) { snprintf(out, n, "00000000:%02X:00.0", 0x18 + idx * 0x10); }

nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    long err = env_int("FAKE_NVML_INIT_ERROR", 0);
    if (err) return (nvmlReturn_t)err;
    gpu_count = (int)env_int("FAKE_NVML_GPUS", 1);
    if (gpu_count > MAX_GPUS) gpu_count = MAX_GPUS;
    for (int i = 0; i < MAX_GPUS; i++) devices[i].index = i;
    initialized = 1;
    return OK;
}

nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

nvmlReturn_t nvmlShutdown(void) {
    initialized = 0;
    return OK;
}

const char *nvmlErrorString(nvmlReturn_t r) {
    switch (r) {
    case OK: return "Success";
    case ERR_UNINITIALIZED: return "Uninitialized";
    case ERR_INVALID_ARGUMENT: return "Invalid Argument";
    case ERR_NOT_SUPPORTED: return "Not Supported";
    case 9: return "Driver Not Loaded";
    case ERR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    snprintf(version, length, "%s", env("FAKE_NVML_DRIVER", "550.90.07"));
    return OK;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
    *v = 12040;
    return OK;
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return nvmlSystemGetCudaDriverVersion(v); }

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    if (!initialized) return ERR_UNINITIALIZED;
    *count = (unsigned int)gpu_count;
    return OK;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **device) {
    if (!initialized) return ERR_UNINITIALIZED;
    if ((int)index >= gpu_count) return ERR_INVALID_ARGUMENT;
    if ((long)index == env_int("FAKE_NVML_LOST", -1) && env_int("FAKE_NVML_LOST_HANDLE", 0)) return ERR_GPU_IS_LOST;
    *device = &devices[index];
    return OK;
}

nvmlReturn_t nvmlDeviceGetName(void *dev, char *name, unsigned int length) {
    CHECK_DEVICE(dev);
    snprintf(name, length, "%s", env("FAKE_NVML_NAME", "NVIDIA H100 80GB HBM3"));
    return OK;
}

nvmlReturn_t nvmlDeviceGetUUID(void *dev, char *uuid, unsigned int length) {
    CHECK_DEVICE(dev);
    snprintf(uuid, length, "GPU-00000000-0000-0000-0000-%012d", idx);
    return OK;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(void *dev, nvmlPciInfo_t *pci) {
    CHECK_DEVICE(dev);
    memset(pci, 0, sizeof(*pci));
    bus_id(idx, pci->busId, sizeof(pci->busId));
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", (unsigned)(0x18 + idx * 0x10) & 0xFFu);
    pci->bus = 0x18 + idx * 0x10;
    return OK;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(void *dev, nvmlMemory_t *mem) {
    CHECK_DEVICE(dev);
    unsigned long long mib = 1024ULL * 1024ULL;
    mem->total = (unsigned long long)env_int("FAKE_NVML_TOTAL_MIB", 81559) * mib;
    mem->used = (unsigned long long)list_int("FAKE_NVML_USED_MIB", idx, 1) * mib;
    mem->free = mem->total - mem->used;
    return OK;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(void *dev, int *major, int *minor) {
    CHECK_DEVICE(dev);
    *major = (int)env_int("FAKE_NVML_CC_MAJOR", 9);
    *minor = 0;
    return OK;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *count, nvmlProcessInfo_t *infos) {
    CHECK_DEVICE(dev);
    if (unsupported("processes")) return ERR_NOT_SUPPORTED;
    nvmlProcessInfo_t found[MAX_PROCS];
    unsigned int n = 0;
    const char *spec = getenv("FAKE_NVML_PROCS");
    while (spec && *spec && n < MAX_PROCS) {
        int gpu;
        unsigned int pid;
        unsigned long long mib;
        if (sscanf(spec, "%d:%u:%llu", &gpu, &pid, &mib) == 3 && gpu == idx) {
            found[n].pid = pid;
            found[n].usedGpuMemory = mib * 1024ULL * 1024ULL;
            found[n].gpuInstanceId = found[n].computeInstanceId = 0xFFFFFFFFu;
            n++;
        }
        spec = strchr(spec, ';');
        if (spec) spec++;
    }
    if (n == 0) {
        *count = 0;
        return OK;
    }
    if (infos == NULL || *count < n) { /* the two-call protocol: ask for the size first */
        *count = n;
        return ERR_INSUFFICIENT_SIZE;
    }
    memcpy(infos, found, n * sizeof(nvmlProcessInfo_t));
    *count = n;
    return OK;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(void *dev, nvmlUtilization_t *u) {
    CHECK_DEVICE(dev);
    if (unsupported("utilization")) return ERR_NOT_SUPPORTED;
    u->gpu = (unsigned int)list_int("FAKE_NVML_UTIL", idx, 0);
    u->memory = u->gpu / 2;
    return OK;
}

nvmlReturn_t nvmlDeviceGetClockInfo(void *dev, int type, unsigned int *clock) {
    CHECK_DEVICE(dev);
    (void)type;
    *clock = (unsigned int)env_int("FAKE_NVML_SM_MHZ", 1980);
    return OK;
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(void *dev, int type, unsigned int *clock) {
    CHECK_DEVICE(dev);
    (void)type;
    *clock = (unsigned int)env_int("FAKE_NVML_SM_MAX_MHZ", 1980);
    return OK;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(void *dev, int *mode) {
    CHECK_DEVICE(dev);
    *mode = 1;
    return OK;
}

#ifndef FAKE_MINIMAL
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *reasons) {
    CHECK_DEVICE(dev);
    if (unsupported("throttle")) return ERR_NOT_SUPPORTED;
    *reasons = (unsigned long long)env_int("FAKE_NVML_THROTTLE", 1);
    return OK;
}
nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(void *dev, unsigned long long *reasons) {
    return nvmlDeviceGetCurrentClocksEventReasons(dev, reasons);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw) {
    CHECK_DEVICE(dev);
    if (unsupported("power")) return ERR_NOT_SUPPORTED;
    *mw = (unsigned int)(env_int("FAKE_NVML_POWER_W", 100) * 1000);
    return OK;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(void *dev, unsigned int *mw) {
    CHECK_DEVICE(dev);
    if (unsupported("power")) return ERR_NOT_SUPPORTED;
    *mw = (unsigned int)(env_int("FAKE_NVML_POWER_LIMIT_W", 700) * 1000);
    return OK;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(void *dev, unsigned int *min_mw, unsigned int *max_mw) {
    CHECK_DEVICE(dev);
    if (unsupported("power")) return ERR_NOT_SUPPORTED;
    *min_mw = 200000;
    *max_mw = (unsigned int)(env_int("FAKE_NVML_POWER_MAX_W", 700) * 1000);
    return OK;
}

nvmlReturn_t nvmlDeviceGetTemperature(void *dev, int sensor, unsigned int *temp) {
    CHECK_DEVICE(dev);
    (void)sensor;
    if (unsupported("temperature")) return ERR_NOT_SUPPORTED;
    *temp = (unsigned int)env_int("FAKE_NVML_TEMP_C", 35);
    return OK;
}

static nvmlReturn_t pcie(void *dev, int which, unsigned int *out) {
    CHECK_DEVICE(dev);
    if (unsupported("pcie")) return ERR_NOT_SUPPORTED;
    static const long dflt[4] = {5, 5, 16, 16};
    *out = (unsigned int)list_int("FAKE_NVML_PCIE", which, dflt[which]);
    return OK;
}
nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(void *dev, unsigned int *g) { return pcie(dev, 0, g); }
nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(void *dev, unsigned int *g) { return pcie(dev, 1, g); }
nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(void *dev, unsigned int *w) { return pcie(dev, 2, w); }
nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(void *dev, unsigned int *w) { return pcie(dev, 3, w); }

nvmlReturn_t nvmlDeviceGetTotalEccErrors(void *dev, int type, int counter, unsigned long long *count) {
    CHECK_DEVICE(dev);
    (void)type;
    (void)counter;
    if (unsupported("ecc")) return ERR_NOT_SUPPORTED;
    *count = (unsigned long long)list_int("FAKE_NVML_ECC", idx, 0);
    return OK;
}

nvmlReturn_t nvmlDeviceGetMigMode(void *dev, unsigned int *current, unsigned int *pending) {
    CHECK_DEVICE(dev);
    if (unsupported("mig")) return ERR_NOT_SUPPORTED;
    *current = *pending = 0;
    return OK;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(void *dev, unsigned int link, unsigned int *active) {
    CHECK_DEVICE(dev);
    long links = list_int("FAKE_NVML_NVLINKS", idx, 0);
    if (links == 0 && link == 0) return ERR_NOT_SUPPORTED; /* a PCIe card has no NVLink */
    if (link >= 18) return ERR_INVALID_ARGUMENT;
    *active = (long)link < links ? 1 : 0;
    return OK;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(void *dev, unsigned int link, nvmlPciInfo_t *pci) {
    CHECK_DEVICE(dev);
    (void)link;
    memset(pci, 0, sizeof(*pci));
    if (strcmp(env("FAKE_NVML_NVLINK_MODE", "switch"), "pairs") == 0)
        bus_id(idx ^ 1, pci->busId, sizeof(pci->busId));
    else
        snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", 0xF0 + (int)(link % 4)); /* NVSwitch */
    return OK;
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(void *dev1, void *dev2, int *level) {
    CHECK_DEVICE(dev1);
    if (dev_index(dev2) < 0) return ERR_INVALID_ARGUMENT;
    *level = (int)env_int("FAKE_NVML_TOPO", 30);
    return OK;
}

nvmlReturn_t nvmlDeviceGetP2PStatus(void *dev1, void *dev2, int caps, int *status) {
    CHECK_DEVICE(dev1);
    (void)caps;
    if (dev_index(dev2) < 0) return ERR_INVALID_ARGUMENT;
    *status = (int)env_int("FAKE_NVML_P2P", 0);
    return OK;
}
#endif
