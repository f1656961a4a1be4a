"""The web console (``kubelab ui``): a client of the apiserver like any other component, showing the cluster live.

``python -m console`` serves plain HTML and a little JavaScript (``static/``, no build step, nothing fetched from
elsewhere) over aiohttp; the pages follow the cluster over server-sent events fed by the console's own informers
(feed.py). What only other processes know is read from them when a page asks (sources.py): the apiserver's
``/debug/watches``, each component's ``/debug/informers``, the scheduler's ``/debug/explain`` and
``/debug/whatif``. The 13-step trace and the scheduler's "smallest change" are the launcher's code
(kubelab/commands/trace.py, explain.py), which a component may not import: ``kubelab ui`` passes them in as
``Providers`` (app.py), and the console without them says so.
"""
