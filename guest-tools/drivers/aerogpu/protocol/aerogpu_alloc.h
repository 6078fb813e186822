/* Stable include name for the WDDM allocation private data (see aerogpu_wddm_alloc.h). */
#ifndef AEROGPU_ALLOC_H
#define AEROGPU_ALLOC_H
#include "aerogpu_wddm_alloc.h"
#endif /* AEROGPU_ALLOC_H */
