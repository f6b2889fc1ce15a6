"""The broker's web console and Prometheus metrics (`kgroup serve --http-listen HOST:PORT`).

Off unless `--http-listen` (or `http_listen` in the config file) is given: then one HTTP
listener serves the page (static/, hand-written, no build step, nothing from a CDN),
`/metrics`, `/api/groups[/{group}]` and the page's live stream. See app.py for the routes.
"""
