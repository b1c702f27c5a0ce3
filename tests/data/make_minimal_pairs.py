"""Writes minimal_pairs.tsv: our own English->German minimal pairs, a correct translation and the same with one
error, in four categories. Deterministic: `python tests/data/make_minimal_pairs.py`."""
import collections
from pathlib import Path

rows = []
def add(cat, en, good, bad):
    assert good != bad, (en, good)
    rows.append((cat, en, good, bad))

# 1. noun-phrase agreement: determiner / adjective ending wrong for gender, number or case
np_items = [
    ("My little sister sings.", "Meine kleine Schwester singt.", "Mein kleine Schwester singt."),
    ("Our new neighbour is friendly.", "Unser neuer Nachbar ist freundlich.", "Unsere neuer Nachbar ist freundlich."),
    ("The old man sleeps.", "Der alte Mann schläft.", "Die alte Mann schläft."),
    ("I see a small dog.", "Ich sehe einen kleinen Hund.", "Ich sehe ein kleinen Hund."),
    ("She buys a red car.", "Sie kauft ein rotes Auto.", "Sie kauft einen rotes Auto."),
    ("We live in a big house.", "Wir wohnen in einem großen Haus.", "Wir wohnen in einer großen Haus."),
    ("He reads an interesting book.", "Er liest ein interessantes Buch.", "Er liest eine interessantes Buch."),
    ("The young woman laughs.", "Die junge Frau lacht.", "Der junge Frau lacht."),
    ("I drink a cold beer.", "Ich trinke ein kaltes Bier.", "Ich trinke einen kaltes Bier."),
    ("My brother has a new bike.", "Mein Bruder hat ein neues Fahrrad.", "Meine Bruder hat ein neues Fahrrad."),
    ("The children play in the garden.", "Die Kinder spielen im Garten.", "Das Kinder spielen im Garten."),
    ("Your father works a lot.", "Dein Vater arbeitet viel.", "Deine Vater arbeitet viel."),
    ("Her mother cooks well.", "Ihre Mutter kocht gut.", "Ihr Mutter kocht gut."),
    ("We need a new table.", "Wir brauchen einen neuen Tisch.", "Wir brauchen ein neuen Tisch."),
    ("The small cat is hungry.", "Die kleine Katze hat Hunger.", "Das kleine Katze hat Hunger."),
    ("I like the blue shirt.", "Mir gefällt das blaue Hemd.", "Mir gefällt der blaue Hemd."),
    ("He gives the woman a flower.", "Er gibt der Frau eine Blume.", "Er gibt die Frau eine Blume."),
    ("She helps the old man.", "Sie hilft dem alten Mann.", "Sie hilft den alten Mann."),
    ("The new teacher is nice.", "Die neue Lehrerin ist nett.", "Der neue Lehrerin ist nett."),
    ("My grandmother tells a story.", "Meine Großmutter erzählt eine Geschichte.", "Mein Großmutter erzählt eine Geschichte."),
    ("The tired nurse goes home.", "Die müde Krankenschwester geht nach Hause.", "Der müde Krankenschwester geht nach Hause."),
    ("Our teacher has a black dog.", "Unser Lehrer hat einen schwarzen Hund.", "Unser Lehrer hat ein schwarzen Hund."),
    ("I write a long letter.", "Ich schreibe einen langen Brief.", "Ich schreibe ein langen Brief."),
    ("The quiet student waits.", "Der ruhige Schüler wartet.", "Die ruhige Schüler wartet."),
    ("This city has a beautiful old church.", "Diese Stadt hat eine schöne alte Kirche.", "Dieser Stadt hat eine schöne alte Kirche."),
    ("We eat fresh bread.", "Wir essen frisches Brot.", "Wir essen frischer Brot."),
    ("The old baker buys fresh bread.", "Der alte Bäcker kauft frisches Brot.", "Die alte Bäcker kauft frisches Brot."),
    ("My little cousin paints the kitchen.", "Mein kleiner Cousin streicht die Küche.", "Meine kleiner Cousin streicht die Küche."),
    ("She opens the heavy door.", "Sie öffnet die schwere Tür.", "Sie öffnet den schwere Tür."),
    ("He loves his new job.", "Er liebt seinen neuen Job.", "Er liebt sein neuen Job."),
]
for en, g, b in np_items: add("np_agreement", en, g, b)

# 2. subject-verb agreement
sv_items = [
    ("The children play football.", "Die Kinder spielen Fußball.", "Die Kinder spielt Fußball."),
    ("My sister lives in Berlin.", "Meine Schwester wohnt in Berlin.", "Meine Schwester wohnen in Berlin."),
    ("We are tired after the long hike.", "Wir sind nach der langen Wanderung müde.", "Wir ist nach der langen Wanderung müde."),
    ("You are right.", "Du hast recht.", "Du habe recht."),
    ("The dogs bark loudly.", "Die Hunde bellen laut.", "Die Hunde bellt laut."),
    ("He drinks coffee every morning.", "Er trinkt jeden Morgen Kaffee.", "Er trinken jeden Morgen Kaffee."),
    ("I am a teacher in a small village.", "Ich bin Lehrer in einem kleinen Dorf.", "Ich ist Lehrer in einem kleinen Dorf."),
    ("They come tomorrow.", "Sie kommen morgen.", "Sie kommt morgen."),
    ("The student reads a book.", "Der Student liest ein Buch.", "Der Student lesen ein Buch."),
    ("My parents work in a hospital.", "Meine Eltern arbeiten in einem Krankenhaus.", "Meine Eltern arbeitet in einem Krankenhaus."),
    ("The baby sleeps in the blue pram.", "Das Baby schläft im blauen Kinderwagen.", "Das Baby schlafen im blauen Kinderwagen."),
    ("We go to school.", "Wir gehen zur Schule.", "Wir geht zur Schule."),
    ("The birds sing in the trees.", "Die Vögel singen in den Bäumen.", "Die Vögel singt in den Bäumen."),
    ("She has two brothers.", "Sie hat zwei Brüder.", "Sie haben zwei Brüder."),
    ("The quiet students wait for the bus.", "Die ruhigen Schüler warten auf den Bus.", "Die ruhigen Schüler wartet auf den Bus."),
    ("My friend speaks German.", "Mein Freund spricht Deutsch.", "Mein Freund sprechen Deutsch."),
    ("The girls dance.", "Die Mädchen tanzen.", "Die Mädchen tanzt."),
    ("I know the answer.", "Ich kenne die Antwort.", "Ich kennt die Antwort."),
    ("The train is late.", "Der Zug hat Verspätung.", "Der Zug haben Verspätung."),
    ("The neighbours are friendly.", "Die Nachbarn sind freundlich.", "Die Nachbarn ist freundlich."),
    ("He can swim across the cold lake.", "Er kann über den kalten See schwimmen.", "Er können über den kalten See schwimmen."),
    ("We want to eat.", "Wir wollen essen.", "Wir will essen."),
    ("The old baker bakes bread.", "Der alte Bäcker backt Brot.", "Der alte Bäcker backen Brot."),
    ("You (all) are late.", "Ihr seid spät dran.", "Ihr sind spät dran."),
    ("The flowers smell good.", "Die Blumen riechen gut.", "Die Blumen riecht gut."),
    ("My cousin paints pictures.", "Meine Cousine malt Bilder.", "Meine Cousine malen Bilder."),
    ("The teachers are in the room.", "Die Lehrer sind im Raum.", "Die Lehrer ist im Raum."),
    ("She runs every day.", "Sie läuft jeden Tag.", "Sie laufen jeden Tag."),
    ("The cats sleep on the sofa.", "Die Katzen schlafen auf dem Sofa.", "Die Katzen schläft auf dem Sofa."),
    ("I often eat apples.", "Ich esse oft Äpfel.", "Ich isst oft Äpfel."),
]
for en, g, b in sv_items: add("sv_agreement", en, g, b)

# 3. negation: "nicht" (or "kein") deleted, so the meaning flips
neg_items = [
    ("He is not here.", "Er ist nicht hier.", "Er ist hier."),
    ("I do not like fish.", "Ich mag keinen Fisch.", "Ich mag Fisch."),
    ("We are not tired after the concert.", "Wir sind nach dem Konzert nicht müde.", "Wir sind nach dem Konzert müde."),
    ("She does not drink coffee at night.", "Sie trinkt nachts keinen Kaffee.", "Sie trinkt nachts Kaffee."),
    ("The bakery is not open today.", "Die Bäckerei ist heute nicht geöffnet.", "Die Bäckerei ist heute geöffnet."),
    ("My uncle cannot swim.", "Mein Onkel kann nicht schwimmen.", "Mein Onkel kann schwimmen."),
    ("They do not come tomorrow.", "Sie kommen morgen nicht.", "Sie kommen morgen."),
    ("The water in the harbour is not cold.", "Das Wasser im Hafen ist nicht kalt.", "Das Wasser im Hafen ist kalt."),
    ("My uncle does not have a car.", "Mein Onkel hat kein Auto.", "Mein Onkel hat ein Auto."),
    ("I do not know the new dentist.", "Ich kenne den neuen Zahnarzt nicht.", "Ich kenne den neuen Zahnarzt."),
    ("The film was not good.", "Der Film war nicht gut.", "Der Film war gut."),
    ("We did not see the bus.", "Wir haben den Bus nicht gesehen.", "Wir haben den Bus gesehen."),
    ("My sister does not eat meat.", "Meine Schwester isst kein Fleisch.", "Meine Schwester isst Fleisch."),
    ("Do not open the window.", "Öffne das Fenster nicht.", "Öffne das Fenster."),
    ("The children are not at home.", "Die Kinder sind nicht zu Hause.", "Die Kinder sind zu Hause."),
    ("The twins are not hungry.", "Die Zwillinge haben keinen Hunger.", "Die Zwillinge haben Hunger."),
    ("She is not my teacher.", "Sie ist nicht meine Lehrerin.", "Sie ist meine Lehrerin."),
    ("It is not raining in the valley.", "Es regnet nicht im Tal.", "Es regnet im Tal."),
    ("He did not find his keys.", "Er hat seine Schlüssel nicht gefunden.", "Er hat seine Schlüssel gefunden."),
    ("The garden door is not locked.", "Die Gartentür ist nicht abgeschlossen.", "Die Gartentür ist abgeschlossen."),
    ("I do not understand the second question.", "Ich verstehe die zweite Frage nicht.", "Ich verstehe die zweite Frage."),
    ("We have no time for the museum.", "Wir haben keine Zeit für das Museum.", "Wir haben Zeit für das Museum."),
    ("The soup is not hot.", "Die Suppe ist nicht heiß.", "Die Suppe ist heiß."),
    ("You should not wait.", "Du solltest nicht warten.", "Du solltest warten."),
    ("The baker does not work on Sundays.", "Der Bäcker arbeitet sonntags nicht.", "Der Bäcker arbeitet sonntags."),
    ("The bread from yesterday is not fresh.", "Das Brot von gestern ist nicht frisch.", "Das Brot von gestern ist frisch."),
    ("I did not sleep well in the tent.", "Ich habe im Zelt nicht gut geschlafen.", "Ich habe im Zelt gut geschlafen."),
    ("She will not come.", "Sie wird nicht kommen.", "Sie wird kommen."),
    ("This is not my green bag.", "Das ist nicht meine grüne Tasche.", "Das ist meine grüne Tasche."),
    ("They are not pupils of this school.", "Sie sind keine Schüler dieser Schule.", "Sie sind Schüler dieser Schule."),
]
for en, g, b in neg_items: add("negation", en, g, b)

# 4. word order: verb second in main clauses, verb last in subordinate clauses, participle last
wo_items = [
    ("I know that he comes today.", "Ich weiß, dass er heute kommt.", "Ich weiß, dass er kommt heute."),
    ("Tomorrow we go to the cinema.", "Morgen gehen wir ins Kino.", "Morgen wir gehen ins Kino."),
    ("She says that she is tired.", "Sie sagt, dass sie müde ist.", "Sie sagt, dass sie ist müde."),
    ("I have read the thick book.", "Ich habe das dicke Buch gelesen.", "Ich habe gelesen das dicke Buch."),
    ("Today I work at home.", "Heute arbeite ich zu Hause.", "Heute ich arbeite zu Hause."),
    ("We stay at home because it is cold.", "Wir bleiben zu Hause, weil es kalt ist.", "Wir bleiben zu Hause, weil es ist kalt."),
    ("He has bought a new car for his daughter.", "Er hat für seine Tochter ein neues Auto gekauft.", "Er hat gekauft für seine Tochter ein neues Auto."),
    ("In the morning she drinks tea.", "Am Morgen trinkt sie Tee.", "Am Morgen sie trinkt Tee."),
    ("I think that the train is late.", "Ich glaube, dass der Zug Verspätung hat.", "Ich glaube, dass der Zug hat Verspätung."),
    ("We want to visit our grandmother.", "Wir wollen unsere Großmutter besuchen.", "Wir wollen besuchen unsere Großmutter."),
    ("After lunch the children play.", "Nach dem Mittagessen spielen die Kinder.", "Nach dem Mittagessen die Kinder spielen."),
    ("My aunt can speak three languages.", "Meine Tante kann drei Sprachen sprechen.", "Meine Tante kann sprechen drei Sprachen."),
    ("I am happy because you are here.", "Ich bin froh, weil du hier bist.", "Ich bin froh, weil du bist hier."),
    ("Yesterday I saw a film.", "Gestern habe ich einen Film gesehen.", "Gestern ich habe einen Film gesehen."),
    ("He asks whether we are coming.", "Er fragt, ob wir kommen.", "Er fragt, ob kommen wir."),
    ("They have eaten the cake.", "Sie haben den Kuchen gegessen.", "Sie haben gegessen den Kuchen."),
    ("On Sunday we visit our friends.", "Am Sonntag besuchen wir unsere Freunde.", "Am Sonntag wir besuchen unsere Freunde."),
    ("I must go to the pharmacy now.", "Ich muss jetzt zur Apotheke gehen.", "Ich muss gehen jetzt zur Apotheke."),
    ("When it rains, we stay inside.", "Wenn es regnet, bleiben wir drinnen.", "Wenn es regnet, wir bleiben drinnen."),
    ("She has written a letter.", "Sie hat einen Brief geschrieben.", "Sie hat geschrieben einen Brief."),
    ("I hope that you are well.", "Ich hoffe, dass es dir gut geht.", "Ich hoffe, dass es geht dir gut."),
    ("Now the baby sleeps.", "Jetzt schläft das Baby.", "Jetzt das Baby schläft."),
    ("We will buy bread.", "Wir werden Brot kaufen.", "Wir werden kaufen Brot."),
    ("He is sad because his dog is ill.", "Er ist traurig, weil sein Hund krank ist.", "Er ist traurig, weil sein Hund ist krank."),
    ("In winter it is cold.", "Im Winter ist es kalt.", "Im Winter es ist kalt."),
    ("The teacher has opened the window.", "Der Lehrer hat das Fenster geöffnet.", "Der Lehrer hat geöffnet das Fenster."),
    ("I do not know where she lives.", "Ich weiß nicht, wo sie wohnt.", "Ich weiß nicht, wo wohnt sie."),
    ("Every morning my father reads the newspaper.", "Jeden Morgen liest mein Vater die Zeitung.", "Jeden Morgen mein Vater liest die Zeitung."),
    ("You should drink more water.", "Du solltest mehr Wasser trinken.", "Du solltest trinken mehr Wasser."),
    ("She knows that we are waiting.", "Sie weiß, dass wir warten.", "Sie weiß, dass warten wir."),
]
for en, g, b in wo_items: add("word_order", en, g, b)


# Harder ones: agreement across a prepositional phrase or relative clause, longer sentences.
for en, g, b in [
    ("The woman with the two dogs lives next door.", "Die Frau mit den zwei Hunden wohnt nebenan.", "Die Frau mit den zwei Hunden wohnen nebenan."),
    ("The keys to the old cabinet are on the table.", "Die Schlüssel zum alten Schrank liegen auf dem Tisch.", "Die Schlüssel zum alten Schrank liegt auf dem Tisch."),
    ("The man who sold us the bikes is my uncle.", "Der Mann, der uns die Fahrräder verkauft hat, ist mein Onkel.", "Der Mann, der uns die Fahrräder verkauft hat, sind mein Onkel."),
    ("The children of our neighbour often play in the street.", "Die Kinder unseres Nachbarn spielen oft auf der Straße.", "Die Kinder unseres Nachbarn spielt oft auf der Straße."),
    ("The book that you gave me is very exciting.", "Das Buch, das du mir gegeben hast, ist sehr spannend.", "Das Buch, das du mir gegeben hast, sind sehr spannend."),
    ("My friends from school visit me every summer.", "Meine Freunde aus der Schule besuchen mich jeden Sommer.", "Meine Freunde aus der Schule besucht mich jeden Sommer."),
    ("The price of the tickets was too high.", "Der Preis der Karten war zu hoch.", "Der Preis der Karten waren zu hoch."),
    ("The students in the last row are sleeping.", "Die Schüler in der letzten Reihe schlafen.", "Die Schüler in der letzten Reihe schläft."),
    ("The girl with the red umbrella waits at the station.", "Das Mädchen mit dem roten Regenschirm wartet am Bahnhof.", "Das Mädchen mit dem roten Regenschirm warten am Bahnhof."),
    ("The flowers in my grandmother's garden smell wonderful.", "Die Blumen im Garten meiner Großmutter duften wunderbar.", "Die Blumen im Garten meiner Großmutter duftet wunderbar."),
]:
    add("sv_agreement", en, g, b)
for en, g, b in [
    ("I gave the tired old man a cup of tea.", "Ich gab dem müden alten Mann eine Tasse Tee.", "Ich gab den müden alten Mann eine Tasse Tee."),
    ("We talked with the friendly young woman from the bakery.", "Wir sprachen mit der freundlichen jungen Frau aus der Bäckerei.", "Wir sprachen mit die freundlichen jungen Frau aus der Bäckerei."),
    ("She is looking for her small black cat.", "Sie sucht ihre kleine schwarze Katze.", "Sie sucht ihren kleine schwarze Katze."),
    ("He lives in a small village near the big lake.", "Er wohnt in einem kleinen Dorf in der Nähe des großen Sees.", "Er wohnt in einer kleinen Dorf in der Nähe des großen Sees."),
    ("The teacher praised the clever little girl.", "Die Lehrerin lobte das kluge kleine Mädchen.", "Die Lehrerin lobte den kluge kleine Mädchen."),
    ("I am reading a very long and difficult book.", "Ich lese ein sehr langes und schwieriges Buch.", "Ich lese einen sehr langes und schwieriges Buch."),
    ("They bought a new house with a large garden.", "Sie kauften ein neues Haus mit einem großen Garten.", "Sie kauften ein neues Haus mit einer großen Garten."),
    ("My younger brother studies in a big city.", "Mein jüngerer Bruder studiert in einer großen Stadt.", "Meine jüngerer Bruder studiert in einer großen Stadt."),
    ("We waited for the last train of the evening.", "Wir warteten auf den letzten Zug des Abends.", "Wir warteten auf das letzten Zug des Abends."),
    ("The old lady feeds the hungry birds every day.", "Die alte Dame füttert jeden Tag die hungrigen Vögel.", "Der alte Dame füttert jeden Tag die hungrigen Vögel."),
]:
    add("np_agreement", en, g, b)
for en, g, b in [
    ("I think that he will not come to the party tomorrow.", "Ich glaube, dass er morgen nicht zur Party kommt.", "Ich glaube, dass er morgen zur Party kommt."),
    ("My brother did not want to go to school yesterday.", "Mein Bruder wollte gestern nicht zur Schule gehen.", "Mein Bruder wollte gestern zur Schule gehen."),
    ("She said that the museum is not open on Mondays.", "Sie sagte, dass das Museum montags nicht geöffnet ist.", "Sie sagte, dass das Museum montags geöffnet ist."),
    ("We could not find a table in the restaurant.", "Wir konnten im Restaurant keinen Tisch finden.", "Wir konnten im Restaurant einen Tisch finden."),
    ("The children were not allowed to watch the film.", "Die Kinder durften den Film nicht sehen.", "Die Kinder durften den Film sehen."),
    ("I have never seen such a big dog.", "Ich habe noch nie so einen großen Hund gesehen.", "Ich habe so einen großen Hund gesehen."),
    ("He does not know why the train is late again.", "Er weiß nicht, warum der Zug schon wieder Verspätung hat.", "Er weiß, warum der Zug schon wieder Verspätung hat."),
    ("Our teacher did not give us any homework today.", "Unser Lehrer hat uns heute keine Hausaufgaben gegeben.", "Unser Lehrer hat uns heute Hausaufgaben gegeben."),
    ("Nobody in the room spoke French.", "Niemand im Raum sprach Französisch.", "Jemand im Raum sprach Französisch."),
    ("The bus did not stop at our station.", "Der Bus hielt nicht an unserer Haltestelle.", "Der Bus hielt an unserer Haltestelle."),
]:
    add("negation", en, g, b)
for en, g, b in [
    ("I did not know that your sister plays the piano so well.", "Ich wusste nicht, dass deine Schwester so gut Klavier spielt.", "Ich wusste nicht, dass deine Schwester spielt so gut Klavier."),
    ("Because the weather was bad, we stayed at home.", "Weil das Wetter schlecht war, blieben wir zu Hause.", "Weil das Wetter schlecht war, wir blieben zu Hause."),
    ("She told me that she had found a new job.", "Sie erzählte mir, dass sie eine neue Stelle gefunden hatte.", "Sie erzählte mir, dass sie hatte eine neue Stelle gefunden."),
    ("After the concert we went to a small bar.", "Nach dem Konzert gingen wir in eine kleine Bar.", "Nach dem Konzert wir gingen in eine kleine Bar."),
    ("He wants to know when the shop opens tomorrow.", "Er möchte wissen, wann der Laden morgen öffnet.", "Er möchte wissen, wann öffnet der Laden morgen."),
    ("My parents have lived in this house for twenty years.", "Meine Eltern haben zwanzig Jahre in diesem Haus gewohnt.", "Meine Eltern haben gewohnt zwanzig Jahre in diesem Haus."),
    ("If you are hungry, you can eat an apple.", "Wenn du Hunger hast, kannst du einen Apfel essen.", "Wenn du Hunger hast, du kannst einen Apfel essen."),
    ("We hope that the train arrives on time.", "Wir hoffen, dass der Zug pünktlich ankommt.", "Wir hoffen, dass der Zug ankommt pünktlich."),
    ("Last year my cousin travelled to Spain.", "Letztes Jahr reiste mein Cousin nach Spanien.", "Letztes Jahr mein Cousin reiste nach Spanien."),
    ("The woman who lives upstairs has three cats.", "Die Frau, die oben wohnt, hat drei Katzen.", "Die Frau, die wohnt oben, hat drei Katzen."),
]:
    add("word_order", en, g, b)

print(collections.Counter(r[0] for r in rows), len(rows))
with open(Path(__file__).with_name("minimal_pairs.tsv"), "w", encoding="utf-8") as f:
    f.write("# Our own English->German minimal pairs: a correct translation and the same with one error.\n")
    f.write("# category\tenglish\tcorrect\twrong\n")
    for r in rows:
        assert "\t" not in "".join(r)
        f.write("\t".join(r) + "\n")
