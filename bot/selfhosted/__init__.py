"""`reprobot runner`: a self-hosted runner that connects outbound to the bot, takes jobs matching its labels and
runs each in a child process (client.py: the protocol over HTTP; agent.py: the loop; execute.py: the executors).

It holds no bot secret: only its own runner token, obtained at registration.
"""
