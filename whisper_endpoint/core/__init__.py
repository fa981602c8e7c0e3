"""Foundations every other folder uses: settings and request options, the error family, the typed results,
a request's decode context, languages, sentence ends, the device."""
